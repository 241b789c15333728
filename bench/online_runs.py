#!/usr/bin/env python3
"""online_runs.py - the online policies beside TENSILE for real: `tensile run`
of each model in a device of each percentage of vanilla's peak load, with
DTR online in the runtime (`--policy dtr`), TENSILE's plan and Capuchin
(passive first iteration, then its plan), vanilla trained side by side in
every run. Prints one Markdown row per run: MSR against vanilla's measured
footprint, EOR on wall-clock medians, DTR's drops and rematerialisations,
passive swap-outs (evictions), planned swaps and recomputations, and
whether the final parameters are vanilla's bit for bit.

    bench/online_runs.py [--tensile build/tensile] [--models resnet18:8,densenet121:4,vgg11:8]
                         [--devices 90,80,70] [--policies dtr,tensile,capuchin]
                         [--iterations 8] [--threads 2] [--image-size 32]
"""
import argparse
import json
import subprocess
import sys


def run(a, model, batch, pct, policy):
    cmd = [a.tensile, "run", "--model", model, "--batch", str(batch), "--dataset", "synthetic",
           "--image-size", str(a.image_size), "--iterations", str(a.iterations),
           "--threads", str(a.threads), "--device-memory", "%g%%" % pct, "--policy", policy,
           "--json", "--quiet"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    lines = [l for l in p.stdout.splitlines() if l.strip()]
    if not lines:
        err = (p.stderr.strip().splitlines() or ["no output"])[-1]
        return None, "exit %d: %s" % (p.returncode, err[:160])
    return json.loads(lines[-1]), "ok"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tensile", default="build/tensile")
    ap.add_argument("--models", default="resnet18:8,densenet121:4,vgg11:8")
    ap.add_argument("--devices", default="90,80,70", help="percentages of vanilla's peak load")
    ap.add_argument("--policies", default="dtr,tensile,capuchin")
    ap.add_argument("--iterations", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--image-size", type=int, default=32)
    a = ap.parse_args()
    print("| model | device | policy | MSR | EOR | drops | remats | passive swap-outs | "
          "planned swaps | recomputes | identical | status |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for spec in a.models.split(","):
        model, batch = spec.split(":")
        for pct in (float(x) for x in a.devices.split(",")):
            for pol in a.policies.split(","):
                d, status = run(a, model, int(batch), pct, pol)
                if d is None:
                    print("| %s b%s | %g %% | %s | - | - | - | - | - | - | - | - | %s |"
                          % (model, batch, pct, pol, status))
                else:
                    s = d["scheduled"]
                    print("| %s b%s | %g %% | %s | %.3f | %.3f | %d | %d | %d | %d | %d | %s | %s |"
                          % (model, batch, pct, pol, d["msr"], d["eor"], s.get("drops", 0),
                             s.get("remats", 0), s["evictions"], s["swaps"], s["recomputes"],
                             "yes" if d["identical"] else "NO", status))
                sys.stdout.flush()


if __name__ == "__main__":
    main()
