/* sim_setup.c - see sim_setup.h. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "sim_setup.h"

sim_setup sim_setup_default(void) {
    return (sim_setup){.equal_shares = 0, .random_phases = 0, .seed = 1,
                       .channels = TSL_SIM_CHANNELS_FIFO, .compute = TSL_SIM_COMPUTE_SHARED};
}

/* "0", "random" or "random:SEED" (SEED a decimal integer >= 0). */
static void parse_phases(tsl_args *a, const char *opt, const char *v, sim_setup *s) {
    int64_t seed = 1;
    if (!strcmp(v, "0")) {
        s->random_phases = 0;
        return;
    }
    if (strncmp(v, "random", 6) || (v[6] && (v[6] != ':' || args_parse_int(v + 7, 0, INT64_MAX, &seed))))
        args_die(a, "%s: '%s' is not 0, random or random:SEED (SEED a decimal integer >= 0)", opt,
                 v);
    s->random_phases = 1;
    s->seed = (uint64_t)seed;
}

int sim_setup_option(tsl_args *a, const char *opt, sim_setup *s) {
    static const char *const shares[] = {"shared", "equal", NULL};
    static const char *const channels[] = {"fifo", "fair", NULL};
    static const char *const compute[] = {"shared", "per-job", NULL};
    if (!strcmp(opt, "--channel-share")) s->equal_shares = args_choice(a, opt, shares);
    else if (!strcmp(opt, "--phases")) parse_phases(a, opt, args_value(a, opt), s);
    else if (!strcmp(opt, "--channels")) s->channels = (tsl_sim_channels)args_choice(a, opt, channels);
    else if (!strcmp(opt, "--compute")) s->compute = (tsl_sim_compute)args_choice(a, opt, compute);
    else return 0;
    return 1;
}

const double *sim_setup_shares(const sim_setup *s, int n, double *share) {
    if (!s->equal_shares) return NULL;
    for (int j = 0; j < n; j++) share[j] = 1.0 / n;
    return share;
}

void sim_setup_offsets(const sim_setup *s, tsl_workload *const *w, int n, double *offset_us) {
    if (s->random_phases) tsl_sim_random_offsets(w, n, s->seed, offset_us);
    else
        for (int j = 0; j < n; j++) offset_us[j] = 0;
}

tsl_sim_opts sim_setup_sim_opts(const sim_setup *s, const double *offset_us,
                                const double *share) {
    return (tsl_sim_opts){.iterations = 3, .offset_us = offset_us, .channels = s->channels,
                          .compute = s->compute, .channel_share = share};
}

/* "random:SEED" or "0". */
static const char *phases_name(const sim_setup *s, char *buf, size_t len) {
    if (s->random_phases) snprintf(buf, len, "random:%" PRIu64, s->seed);
    else snprintf(buf, len, "0");
    return buf;
}

const char *sim_setup_describe(const sim_setup *s, char *buf, size_t len) {
    char ph[40];
    snprintf(buf, len,
             "plans on %s; simulated with phases %s (%s), %s channels, %s",
             s->equal_shares ? "equal shares of the channels (--channel-share equal)"
                             : "the channels' shared time axis (the paper)",
             phases_name(s, ph, sizeof ph),
             s->random_phases ? "each job's start uniform in [0, its period)" : "every job at 0",
             s->channels == TSL_SIM_CHANNELS_FAIR ? "fair" : "FIFO",
             s->compute == TSL_SIM_COMPUTE_PER_JOB ? "a compute resource per job"
                                                   : "one compute resource");
    return buf;
}

void sim_setup_json(const sim_setup *s, json_t *o) {
    char ph[40];
    json_object_set_new(o, "channel_share", json_string(s->equal_shares ? "equal" : "shared"));
    json_object_set_new(o, "phases", json_string(phases_name(s, ph, sizeof ph)));
    json_object_set_new(o, "channels",
                        json_string(s->channels == TSL_SIM_CHANNELS_FAIR ? "fair" : "fifo"));
    json_object_set_new(o, "compute", json_string(s->compute == TSL_SIM_COMPUTE_PER_JOB
                                                      ? "per-job" : "shared"));
}
