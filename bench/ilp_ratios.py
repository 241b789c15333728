#!/usr/bin/env python3
"""MO-SOS's Fig. 4 setting, simulated: each model planned by checkmate, str,
mosos and tensile at budgets of 0.8, 0.6 and 0.4 times its vanilla
footprint (`tensile plan --json`, the A6000 profile, SGD with momentum);
per row the footprint reached (ratio of vanilla's), whether the budget is
met, the simulated EOR (iteration time over vanilla's), the planning time
and the solver's outcome (status, seconds, time limit hit, gap).

usage: bench/ilp_ratios.py [--tensile build/tensile] [--time-limit S]
                           [--models cnn:32,vgg11:8:64,...] [--ratios 0.8,0.6,0.4]
Prints a Markdown table; the command line is in its first line.
"""
import argparse
import json
import subprocess
import sys

POLICIES = ["checkmate", "str", "mosos", "tensile"]


def plan(exe, model, batch, image, policy, budget, extra):
    cmd = [exe, "plan", "--model", model, "--batch", str(batch), "--optimizer", "sgd",
           "--policy", policy, "--json"]
    if image:
        cmd += ["--image-size", str(image)]
    if budget:
        cmd += ["--budget", str(budget)]
    cmd += extra
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode not in (0, 3):
        raise SystemExit(f"{' '.join(cmd)}: exit {out.returncode}: {out.stderr.strip()}")
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tensile", default="build/tensile")
    ap.add_argument("--time-limit", default="10")
    ap.add_argument("--models", default="cnn:32,vgg11:8:64,vgg19:8:64,unet:4:64")
    ap.add_argument("--ratios", default="0.8,0.6,0.4")
    a = ap.parse_args()
    print("<!-- " + " ".join(["bench/ilp_ratios.py"] + sys.argv[1:]) + " -->")
    print("| model | policy | ratio | budget met | footprint / vanilla | EOR | planning s "
          "| solver |")
    print("|---|---|---|---|---|---|---|---|")
    for spec in a.models.split(","):
        parts = spec.split(":")
        model, batch = parts[0], int(parts[1])
        image = int(parts[2]) if len(parts) > 2 else 0
        v = plan(a.tensile, model, batch, image, "vanilla", 0, [])
        vf = v["global"]["vanilla_footprint_bytes"]
        for r in [float(x) for x in a.ratios.split(",")]:
            budget = int(vf * r)
            for p in POLICIES:
                extra = ["--time-limit", a.time_limit] if p in ("checkmate", "mosos") else []
                d = plan(a.tensile, model, batch, image, p, budget, extra)
                g = d["global"]
                sv = d.get("solver")
                s = "-"
                if sv:
                    s = f"{sv['status']} {sv['seconds']:.1f} s"
                    if sv["hit_time_limit"]:
                        gap = sv["gap"]
                        s += ", limit hit" + (f", gap {100 * gap:.1f} %" if gap is not None else "")
                    if sv["budget_relaxed"]:
                        s += ", least memory"
                name = f"{model}:{batch}" + (f" ({image} px)" if image else "")
                print(f"| {name} | {p} | {r:.1f} | {'yes' if g['budget_met'] else 'no'} "
                      f"| {g['planned_footprint_bytes'] / vf:.3f} | {g['eor']:.3f} "
                      f"| {d['planning_ms'] / 1e3:.2f} | {s} |", flush=True)


if __name__ == "__main__":
    main()
