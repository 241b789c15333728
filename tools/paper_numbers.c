/*
 * paper_numbers.c - the seed papers' numbers (see paper_numbers.h),
 * copied digit for digit from ../shared/seeds/:
 *   004_2bbc49b46fa994c0.txt  TENSILE (Zhang et al.), section V;
 *   001_b6e13f86460684e6.txt  SmartPool and AutoSwap (Zhang et al.), VI-A, VI-B;
 *   003_72fdcb7d3e5eb1ad.txt  MO-SOS (Wei et al.), section 3.2.
 */
#include <string.h>

#include "paper_numbers.h"

const char pn_cite_tensile_t1[] =
    "TENSILE (seed 004), section V-B, Table I: each phase's performance (TENSILE_cs planned "
    "from predicted latencies, TENSILE_up after the plan's update), batch 16 on an RTX A6000";
const char pn_cite_tensile_t2[] =
    "TENSILE (seed 004), section V-B, Table II: the first iteration's time against vanilla's "
    "(TENSILE's MLP prediction against Capuchin's passive mode)";
const char pn_cite_tensile_t3[] =
    "TENSILE (seed 004), section V-C, Table III: one workload at batch 16 on an RTX A6000";
const char pn_cite_tensile_t4[] =
    "TENSILE (seed 004), section V-E, Table IV: the five models launched one by one in random "
    "order, three repetitions";
const char pn_cite_tensile_f6[] =
    "TENSILE (seed 004), section V-D, Fig. 6: 1 to 4 identical workloads launched together "
    "(a figure: its numbers are not in the text)";
const char pn_cite_tensile_f7[] =
    "TENSILE (seed 004), section V-G, Fig. 7: batch 4 to 64 (a figure: its numbers are not in "
    "the text; the text says MSR rises with the batch for every model, CBR mostly too, "
    "DenseNet at 32 and 64 excepted, and only VGG-16's EOR falls)";
const char pn_cite_smartpool_t1[] =
    "SmartPool (seed 001), section VI-A, Table I: batch 100, CIFAR-10, GTX 1080 Ti; "
    "competitive ratio = footprint / peak memory load";
const char pn_cite_autoswap_t2[] =
    "AutoSwap (seed 001), section VI-B, Table II: largest memory load reduction without "
    "overhead, batch 100, CIFAR-10, GTX 1080 Ti";
const char pn_cite_mosos_f4[] =
    "MO-SOS (seed 003), section 3.2, Fig. 4: time of a training step as the memory ratio falls, "
    "vgg19 (batch 144, 227 px) and unet (batch 120, 256 px) on a Tesla P40 (a figure: its "
    "numbers are not in the text)";
const char pn_mosos_text[] =
    "MO-SOS's text (section 3.2): on average MO-SOS takes 13.53 % less time than "
    "Checkmate-Auto and 4.36 % less than STR-Auto; at memory ratios 0.8 and 0.7 MO-SOS and "
    "STR-Auto are about level, both about 11.2 % below Checkmate-Auto";

/* Table III. */
static const pn_metrics table3[] = {
    {"vgg16", "vdnn-conv", 0.1109, 1.7835, 0.0622},
    {"vgg16", "capuchin", 0.2558, 1.8304, 0.1398},
    {"vgg16", "tensile", 0.2670, 1.6287, 0.1639},
    {"inception3", "vdnn-conv", 0.1633, 2.5184, 0.0648},
    {"inception3", "capuchin", 0.4331, 2.7745, 0.1561},
    {"inception3", "tensile", 0.4361, 1.6468, 0.2648},
    {"inception4", "vdnn-conv", 0.1903, 2.5028, 0.0760},
    {"inception4", "capuchin", 0.5129, 3.2362, 0.1585},
    {"inception4", "tensile", 0.5154, 1.4281, 0.3609},
    {"resnet50", "vdnn-conv", 0.1733, 2.2981, 0.0754},
    {"resnet50", "capuchin", 0.3859, 2.2320, 0.1729},
    {"resnet50", "tensile", 0.4258, 1.5540, 0.2740},
    {"densenet121", "vdnn-conv", 0.1381, 2.6148, 0.0528},
    {"densenet121", "capuchin", 0.4860, 3.4400, 0.1413},
    {"densenet121", "tensile", 0.5135, 1.1678, 0.4397},
};

/* Table IV. */
static const pn_metrics table4[] = {
    {"five models", "vdnn-conv", 0.0580, 1.6297, 0.0356},
    {"five models", "capuchin", 0.1150, 7.6545, 0.0150},
    {"five models", "tensile", 0.1565, 1.1589, 0.1350},
};

/* Table I: each phase ("tensile" the whole run, "tensile_cs" the cold
 * start, "tensile_up" the update). */
static const pn_metrics table1[] = {
    {"vgg16", "tensile", 0.2670, 1.6287, 0.1639},
    {"vgg16", "tensile_cs", 0.2670, 6.0128, 0.0444},
    {"vgg16", "tensile_up", 0.3192, 1.2475, 0.2559},
    {"inception3", "tensile", 0.4361, 1.6468, 0.2648},
    {"inception3", "tensile_cs", 0.4361, 3.1128, 0.1401},
    {"inception3", "tensile_up", 0.4788, 1.4839, 0.3227},
    {"inception4", "tensile", 0.5154, 1.4281, 0.3609},
    {"inception4", "tensile_cs", 0.5154, 2.6727, 0.1929},
    {"inception4", "tensile_up", 0.5558, 1.2898, 0.4309},
    {"resnet50", "tensile", 0.4258, 1.5540, 0.2740},
    {"resnet50", "tensile_cs", 0.4258, 3.5395, 0.1203},
    {"resnet50", "tensile_up", 0.4647, 1.3813, 0.3364},
    {"densenet121", "tensile", 0.5135, 1.1678, 0.4397},
    {"densenet121", "tensile_cs", 0.5135, 2.2532, 0.2279},
    {"densenet121", "tensile_up", 0.5236, 1.0664, 0.4910},
};

/* Table II: the first iteration. */
static const pn_first_iter table2[] = {
    {"vgg16", "tensile", 1.2523, 1.3549, 0.2067},
    {"vgg16", "capuchin", 5.8053, -1, -1},
    {"inception3", "tensile", 1.4744, 1.4743, 0.3699},
    {"inception3", "capuchin", 6.7529, -1, -1},
    {"inception4", "tensile", 1.3797, 2.4991, 0.2865},
    {"inception4", "capuchin", 10.2088, -1, -1},
    {"resnet50", "tensile", 1.3924, 1.7823, 0.3198},
    {"resnet50", "capuchin", 9.6073, -1, -1},
    {"densenet121", "tensile", 1.3855, 1.3855, 0.3335},
    {"densenet121", "capuchin", 10.0925, -1, -1},
};

/* SmartPool's Table I (load, CnMem and SmartPool ratios) and AutoSwap's
 * Table II (reduced load, reduction %). */
static const pn_smartpool smartpool[] = {
    {"resnet18", 1452, 1.033, 1.003, 1152, 20.7},
    {"resnet34", 2824, 1.028, 1.001, 2124, 24.8},
    {"resnet50", 4418, 1.030, 1.003, 2906, 34.2},
    {"resnet101", 8367, 1.028, 1.0005, 5658, 32.4},
    {"vgg11", 389, 1.169, 1.013, 284, 27.0},
    {"vgg13", 509, 1.115, 1.016, 360, 29.3},
    {"vgg16", 647, 1.113, 1.012, 447, 30.9},
    {"vgg19", 785, 1.072, 1.011, 561, 28.5},
};

const char *const pn_smartpool_models[] = {"resnet18", "resnet34", "resnet50", "resnet101",
                                           "vgg11",    "vgg13",    "vgg16",    "vgg19", NULL};

#define N_OF(a) ((int)(sizeof a / sizeof *a))

const pn_metrics *pn_tensile_table3(const char *model, const char *method) {
    for (int i = 0; i < N_OF(table3); i++)
        if (!strcmp(table3[i].model, model) && !strcmp(table3[i].method, method)) return &table3[i];
    return NULL;
}

const pn_metrics *pn_tensile_table1(const char *model, const char *phase) {
    for (int i = 0; i < N_OF(table1); i++)
        if (!strcmp(table1[i].model, model) && !strcmp(table1[i].method, phase)) return &table1[i];
    return NULL;
}

const pn_first_iter *pn_tensile_table2(const char *model, const char *method) {
    for (int i = 0; i < N_OF(table2); i++)
        if (!strcmp(table2[i].model, model) && !strcmp(table2[i].method, method)) return &table2[i];
    return NULL;
}

const pn_metrics *pn_tensile_table4(const char *method) {
    for (int i = 0; i < N_OF(table4); i++)
        if (!strcmp(table4[i].method, method)) return &table4[i];
    return NULL;
}

const pn_smartpool *pn_smartpool_model(const char *model) {
    for (int i = 0; i < N_OF(smartpool); i++)
        if (!strcmp(smartpool[i].model, model)) return &smartpool[i];
    return NULL;
}
