#!/usr/bin/env python3
"""cold_runs.py - issue 13's runs: TENSILE's cold start for real (Tables I
and II of the paper, TENSILE 004 V-B) with `tensile run --cold-start`.

Each run plans its first iteration from the predictor's latencies (no
vanilla warm-up in the plan's making), sized to that plan's footprint + 1 %
(`--device-memory plan+1%`), with the copy channels throttled; after
--cs-iters iterations the plan is updated from the measured latencies
(EWMA) and the rest of the run is the updated phase. Vanilla trains beside
it in the same process, so every ratio is measured in one run. Printed:
the machine, then per model the medians and spreads of each phase's MSR,
EOR and CBR (Table I), the first iteration's EOR against vanilla's first
iteration, the prediction's time and its share (Table II), and whether the
parameters were bitwise identical to vanilla's. Table II's Capuchin rows:
after each TENSILE run, `tensile run --policy capuchin` in the same device
(the paper's "Extra Setting": Capuchin's budget is TENSILE's footprint), its
first iteration in passive mode (no plan: evict on out-of-memory, record
the accesses) against vanilla's first (both in fresh sessions).

    bench/cold_runs.py [--tensile build/tensile] [--predictor profiles/predictor.tsp]
                       [--reps 3] [--gbps 2] [--iterations 20] [--cs-iters 5]
                       [--models LIST] [--no-capuchin] [--raw FILE]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

CASES = [  # model, batch, image size: issue 9's small shapes
    ("resnet18", 24, 40),
    ("vgg11", 16, 32),
    ("densenet121", 7, 48),
]


def run(a, model, batch, image):
    cmd = [a.tensile, "run", "--model", model, "--batch", str(batch), "--image-size", str(image),
           "--dataset", "synthetic", "--pcie-gbps", str(a.gbps), "--iterations", str(a.iterations),
           "--device-memory", "plan+1%", "--cold-start", "--cold-start-iters", str(a.cs_iters),
           "--json", "--quiet"]
    if a.predictor:
        cmd += ["--predictor", a.predictor]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode not in (0, 4):
        sys.exit(f"cold_runs: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout.strip().splitlines()[-1]), cmd


def run_capuchin(a, model, batch, image, device_bytes):
    """Capuchin in TENSILE's cold-start device (the paper's "Extra Setting":
    its budget is TENSILE's footprint): its first iteration runs in passive
    mode (no plan; evict on out-of-memory, record the accesses). Returns its
    first iteration's ms, vanilla's first iteration's ms (both in fresh
    sessions), the passive iteration's evictions, and the command; None for
    the numbers when the run did not report (the reason printed)."""
    iters = 2  # the passive iteration, then one under Capuchin's plan
    cmd = [a.tensile, "run", "--model", model, "--batch", str(batch), "--image-size", str(image),
           "--dataset", "synthetic", "--pcie-gbps", str(a.gbps), "--iterations", str(iters),
           "--policy", "capuchin", "--device-memory", str(device_bytes), "--json", "--quiet"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = p.stdout.strip().splitlines()
    if p.returncode not in (0, 4) or not lines:
        print(f"cold_runs: {' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-400:]}",
              file=sys.stderr)
        return None, None, None, cmd
    d = json.loads(lines[-1])
    pa = d["scheduled"].get("passive_iteration")
    if not pa:
        print(f"cold_runs: {' '.join(cmd)}: no passive iteration in the report", file=sys.stderr)
        return None, None, None, cmd
    return pa["iter_ms"], d["vanilla"]["iteration_ms"][0], pa["evictions"], cmd


def spread(xs, fmt="{:.3f}"):
    xs = [x for x in xs if x == x]
    if not xs:
        return "none"
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}..{fmt.format(max(xs))})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tensile", default="build/tensile")
    ap.add_argument("--predictor", default=None)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--gbps", type=float, default=2.0)
    ap.add_argument("--iterations", type=int, default=20)
    ap.add_argument("--cs-iters", type=int, default=5)
    ap.add_argument("--models", default=None, help="comma-separated subset of the cases")
    ap.add_argument("--no-capuchin", action="store_true",
                    help="leave out Capuchin's passive first iteration (Table II)")
    ap.add_argument("--raw", default=None, help="also write every run's JSON object, one a line")
    a = ap.parse_args()
    cases = [c for c in CASES if not a.models or c[0] in a.models.split(",")]
    try:
        load = os.getloadavg()
    except OSError:
        load = (0, 0, 0)
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, "
          f"{platform.platform()}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the "
          f"start; channels at {a.gbps} GB/s; {a.iterations} iterations per run, the update after "
          f"{a.cs_iters}; {a.reps} runs per model")
    rows1, rows2 = [], []
    for model, batch, image in cases:
        res, cap = [], []
        ccmd = None
        for _ in range(a.reps):
            d, cmd = run(a, model, batch, image)
            res.append(d)
            if not a.no_capuchin:
                pms, vms, ev, ccmd = run_capuchin(a, model, batch, image, d["device_memory_bytes"])
                if pms is not None:
                    cap.append((pms / vms, pms, vms, ev))
            if a.raw:
                with open(a.raw, "a") as f:
                    f.write(json.dumps(d) + "\n")
        print("  " + " ".join(cmd))
        if ccmd:
            print("  " + " ".join(ccmd[:-4] + ["--device-memory", "<the run's device_memory_bytes>"] + ccmd[-2:]))
        # a run whose update was refused (the measured latencies' plan does not
        # fit the first plan's budget) has no updated phase: left out of its column
        ph = lambda k, f: [d["phases"][k][f] for d in res if d["phases"][k]["iterations"] > 0] or [float("nan")]
        reasons = sorted({d.get("update_reason", "") for d in res if d["phases"]["up"]["iterations"] == 0})
        ident = all(d["identical"] for d in res)
        upd = all(d["updated"] for d in res)
        rows1.append((model, batch, image, ph("cs", "msr"), ph("cs", "eor"), ph("cs", "cbr"),
                      ph("up", "msr"), ph("up", "eor"), ph("up", "cbr"),
                      [d["msr"] for d in res], [d["eor"] for d in res], [d["cbr"] for d in res],
                      ident, upd, reasons))
        rows2.append((model, batch, image, [d["first_iteration_eor"] for d in res],
                      [d["predict_ms"] for d in res],
                      [d["first_iteration_eor_with_prediction"] - d["first_iteration_eor"] for d in res],
                      [d["first_iteration_ms"] for d in res], [d["vanilla_first_iteration_ms"] for d in res],
                      cap, a.no_capuchin))
    print()
    print("Table I (each phase; median (min..max) of the runs)")
    print()
    print("| model | phase | MSR | EOR | CBR |")
    print("|---|---|---|---|---|")
    for r in rows1:
        name = f"{r[0]} b{r[1]} {r[2]}px"
        print(f"| {name} | TENSILE (whole run) | {spread(r[9])} | {spread(r[10])} | {spread(r[11])} |")
        print(f"| | TENSILE_cs | {spread(r[3])} | {spread(r[4])} | {spread(r[5])} |")
        print(f"| | TENSILE_up | {spread(r[6])} | {spread(r[7])} | {spread(r[8])} |")
    print()
    for r in rows1:
        gap = [abs(u - c) for c, u in zip(r[3], r[6]) if u == u]
        print(f"{r[0]}: |MSR_cs - MSR_up| {spread(gap)} (target <= 0.02); parameters bitwise "
              f"identical to vanilla's in every run: {'yes' if r[12] else 'NO'}; updated in every "
              f"run: {'yes' if r[13] else 'NO'}")
        for why in r[14]:
            print(f"  a run with no updated phase: {why}")
    print()
    print("Table II (the first iteration; median (min..max))")
    print()
    print("| model | method | first-iteration EOR | prediction ms | prediction EOR | first iteration ms | vanilla's first ms |")
    print("|---|---|---|---|---|---|---|")
    for r in rows2:
        name = f"{r[0]} b{r[1]} {r[2]}px"
        print(f"| {name} | TENSILE | {spread(r[3])} | {spread(r[4], '{:.3f}')} | {spread(r[5], '{:.5f}')} "
              f"| {spread(r[6], '{:.1f}')} | {spread(r[7], '{:.1f}')} |")
        cap = r[8]
        if r[9]:
            print("| | Capuchin (passive mode) | not run (--no-capuchin) | | | | |")
        elif not cap:
            print("| | Capuchin (passive mode) | no run reported (see the messages above) | | | | |")
        else:
            print(f"| | Capuchin (passive mode; evictions {spread([c[3] for c in cap], '{:.0f}')}) "
                  f"| {spread([c[0] for c in cap])} | none | 0 | {spread([c[1] for c in cap], '{:.1f}')} "
                  f"| {spread([c[2] for c in cap], '{:.1f}')} |")


if __name__ == "__main__":
    main()
