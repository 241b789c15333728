/*
 * sim_setup.h - how `tensile plan` shares the copy channels among its jobs
 * and simulates them: --channel-share shared|equal (the planner's time axis
 * or channel shares, tsl_plan_opts.channel_share), --phases 0|random[:SEED]
 * (the jobs' start offsets), --channels fifo|fair and --compute
 * shared|per-job (the simulator's models, tensile/sim.h).
 */
#ifndef TSL_TOOLS_SIM_SETUP_H
#define TSL_TOOLS_SIM_SETUP_H
#include <jansson.h>
#include <stdint.h>

#include "args.h"
#include "tensile/sim.h"

typedef struct sim_setup {
    int equal_shares;          /* --channel-share equal: job j on 1/n of the channels */
    int random_phases;         /* --phases random[:SEED] */
    uint64_t seed;             /* its seed (1 when not given) */
    tsl_sim_channels channels; /* --channels */
    tsl_sim_compute compute;   /* --compute */
} sim_setup;

/* The defaults: the shared time axis, phases 0, FIFO channels, one compute
 * resource (the simulation of old). */
sim_setup sim_setup_default(void);
/* If `opt` is one of the four options, reads its value into *s (exit 2
 * naming the value when it is not one of the forms above) and returns 1;
 * else returns 0 and reads nothing. */
int sim_setup_option(tsl_args *a, const char *opt, sim_setup *s);
/* With equal shares fills share[0 .. n) with 1/n and returns share; else
 * returns NULL (the shared time axis). */
const double *sim_setup_shares(const sim_setup *s, int n, double *share);
/* Fills offset_us[0 .. n): random phases from the seed
 * (tsl_sim_random_offsets), or 0. */
void sim_setup_offsets(const sim_setup *s, tsl_workload *const *w, int n, double *offset_us);
/* The simulator's options for these settings (the arrays are borrowed). */
tsl_sim_opts sim_setup_sim_opts(const sim_setup *s, const double *offset_us,
                                const double *share);
/* One line saying how the jobs were planned and simulated, into buf. */
const char *sim_setup_describe(const sim_setup *s, char *buf, size_t len);
/* Sets the settings on a JSON object: "channel_share" ("shared" or
 * "equal"), "phases" ("0" or "random:SEED"), "channels" ("fifo" or "fair"),
 * "compute" ("shared" or "per-job"). */
void sim_setup_json(const sim_setup *s, json_t *o);
#endif
