#!/usr/bin/env python3
"""frontier_real.py - issue 12's budget sweep for real: `tensile run` on the
CPU backend at a device of each fraction of vanilla's footprint, with the
copy channels throttled and the default thread count, beside the figures
the plan predicted (its simulation on the latencies the run measured).

For each model and policy: one vanilla-sized run gives vanilla's measured
footprint F (the allocator's ledger, kernel workspaces included); then for
each fraction f a run with `--device-memory f x F` trains vanilla and the
policy side by side (tensile run), so every EOR is a ratio measured in one
run. Printed per point: the measured footprint against the budget, the
measured EOR beside the simulated one and their difference, swaps,
recomputations, stalls, evictions, and whether the final parameters were
bitwise identical to vanilla's (invariant 5). A point whose plan does not
fit says so (the run's exit status 3 and its reason).

    bench/frontier_real.py [--tensile build/tensile] [--models resnet18,densenet121]
                           [--policies tensile] [--fractions 1.0,0.9,...,0.3]
                           [--iterations 8] [--gbps 2] [--reps 1] [--raw FILE]
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

CASES = {  # model: batch, image size (issue 9's small shapes)
    "resnet18": (24, 40),
    "densenet121": (7, 48),
    "vgg11": (16, 32),
}


def run(a, model, policy, device=None):
    batch, image = CASES[model]
    cmd = [a.tensile, "run", "--model", model, "--batch", str(batch), "--image-size", str(image),
           "--dataset", "synthetic", "--pcie-gbps", str(a.gbps), "--iterations",
           str(a.iterations), "--policy", policy, "--json", "--quiet"]
    if device:
        cmd += ["--device-memory", str(device)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = p.stdout.strip().splitlines()
    d = None
    if lines:
        try:
            d = json.loads(lines[-1])
        except json.JSONDecodeError:
            d = None
    why = p.stderr.strip().splitlines()[-1] if p.stderr.strip() else ""
    return p.returncode, d, why, cmd


def med(xs, fmt="{:.3f}"):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    if len(xs) == 1:
        return fmt.format(xs[0])
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}..{fmt.format(max(xs))})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tensile", default="build/tensile")
    ap.add_argument("--models", default="resnet18,densenet121")
    ap.add_argument("--policies", default="tensile")
    ap.add_argument("--fractions", default="1.0,0.9,0.8,0.7,0.6,0.5,0.4,0.3")
    ap.add_argument("--iterations", type=int, default=8)
    ap.add_argument("--gbps", type=float, default=2.0)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--raw", default=None, help="also write every run's JSON object, one a line")
    a = ap.parse_args()
    models = a.models.split(",")
    for m in models:
        if m not in CASES:
            sys.exit(f"frontier_real: --models: unknown model '{m}' (expected some of: "
                     f"{', '.join(CASES)})")
    try:
        fractions = [float(x) for x in a.fractions.split(",")]
    except ValueError:
        sys.exit(f"frontier_real: --fractions: '{a.fractions}' is not a comma list of numbers")
    if any(not 0 < f <= 1.5 for f in fractions):
        sys.exit(f"frontier_real: --fractions: each must be in (0, 1.5]: {a.fractions}")
    load = os.getloadavg() if hasattr(os, "getloadavg") else (0, 0, 0)
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, "
          f"{platform.platform()}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the "
          f"start; channels at {a.gbps} GB/s; {a.iterations} iterations per run; default threads; "
          f"{a.reps} run(s) per point")
    print()
    print("| model | policy | fraction | budget MiB | measured footprint MiB | fits | measured EOR "
          "| simulated EOR | difference | swaps | recomputes | stall ms | evictions | identical "
          "| status |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for model in models:
        rc, d, why, cmd = run(a, model, "vanilla")
        if not d:
            print(f"| {model} | vanilla | - | - | - | - | - | - | - | - | - | - | - | - | failed "
                  f"(exit {rc}): {why} |")
            continue
        vfp = d["vanilla"]["footprint_bytes"]
        for policy in a.policies.split(","):
            for f in fractions:
                budget = int(f * vfp)
                res = []
                status = []
                for _ in range(a.reps):
                    rc, d, why, cmd = run(a, model, policy, budget)
                    if a.raw and d:
                        with open(a.raw, "a") as fh:
                            fh.write(json.dumps({"fraction": f, "budget": budget, **d}) + "\n")
                    if rc not in (0, 4) or not d or not d.get("scheduled"):
                        status.append(f"exit {rc}: {why}"[:160])
                        continue
                    res.append(d)
                if not res:
                    print(f"| {model} | {policy} | {f:.2f} | {budget / 2**20:.1f} | - | - | - | - | "
                          f"- | - | - | - | - | - | {'; '.join(sorted(set(status)))} |")
                    continue
                fp = [r["scheduled"]["footprint_bytes"] for r in res]
                eor = [r["eor"] for r in res]
                peor = [r.get("predicted_eor") for r in res]
                diff = [abs(e - p) for e, p in zip(eor, peor) if p is not None]
                s = res[0]["scheduled"]
                print(f"| {model} | {policy} | {f:.2f} | {budget / 2**20:.1f} "
                      f"| {med([x / 2**20 for x in fp], '{:.1f}')} | {'yes' if max(fp) <= budget else 'NO'} "
                      f"| {med(eor)} | {med(peor)} | {med(diff)} | {s.get('swaps', '-')} "
                      f"| {s.get('recomputes', '-')} | {med([r['scheduled'].get('stall_ms', 0) for r in res], '{:.1f}')} "
                      f"| {s.get('evictions', '-')} | {'yes' if all(r['identical'] for r in res) else 'NO'} "
                      f"| {'budget met' if all(r.get('budget_met') for r in res) else 'plan above the budget'}"
                      f"{'; ' + '; '.join(status) if status else ''} |", flush=True)
        print(f"  {model}: vanilla footprint {vfp / 2**20:.1f} MiB ({vfp} bytes); "
              + " ".join(cmd[:-2]).replace(str(budget), "<fraction x vanilla footprint>"))


if __name__ == "__main__":
    main()
