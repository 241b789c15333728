#!/usr/bin/env python3
"""daemon_runs.py - issue 10's experiments for real: job processes under
the daemon (tensile serve) on one shared CPU device with its copy channels
throttled, the paper's five models at small shapes.

Three experiments, each run under a TENSILE daemon and, side by side, under
a vanilla daemon on the same device (the same jobs, submitted the same way,
one run after the other, repeat by repeat):

  scale  (the paper's Fig. 6) 1, 2, 3 and 4 identical jobs of each model,
         submitted together; the device holds the jobs' vanilla footprints
         (+1 %), so neither daemon queues and the figures compare like with
         like.
  mixed  (Table IV) the five models submitted one by one in a random order
         (seeded per repeat), a random 1-3 s apart; the device holds their
         vanilla footprints (+1 %).
  tight  (the scenario the paper lacks) the five models submitted together
         on a device of 60 % of their vanilla footprints: the TENSILE daemon
         (admission queue), the vanilla daemon with no admission control
         (--admission none: a job that does not fit fails, as on a GPU
         shared with no scheduler) and the vanilla daemon with its queue.

Reported per row: the global peak footprint in the shared ledger (exact to
the byte) and MSR on it against vanilla's; per job EOR = its mean iteration
time under TENSILE over the same job's under vanilla in the same experiment
(median and min..max over the jobs and repeats); CBR = MSR / EOR (the
paper's); replans, queueing time, and jobs done/failed. Medians over
--reps repeats with min..max.

    bench/daemon_runs.py [--tensile build/tensile] [--reps 3] [--gbps 2]
                         [--experiments scale,mixed,tight] [--models m1,m2]
                         [--iterations 10] [--jobs 1,2,3,4]
"""
import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

MODELS = [  # the paper's five, at small shapes (model, batch, image size)
    ("vgg16", 4, 32),
    ("inception3", 4, 75),
    ("inception4", 4, 75),
    ("resnet50", 4, 32),
    ("densenet121", 4, 32),
]
MIB = 1 << 20


def shape(model):
    for m in MODELS:
        if m[0] == model:
            return m
    sys.exit(f"daemon_runs: --models: unknown model '{model}' (one of "
             f"{', '.join(m[0] for m in MODELS)})")


def vanilla_footprint(a, model):
    """The footprint a vanilla job of `model` needs under the daemon: one
    iteration alone on a 4 GiB device, its region (the plan's
    predicted footprint, which counts its kernels' workspaces at the
    threads a daemon's job runs with) or its measured peak, the larger.
    (`tensile info` counts the graph's tensors only, no workspaces.)"""
    b = argparse.Namespace(**vars(a))
    b.iterations = 1
    st = scenario(b, "vanilla", 4 << 30, [(0, model)])
    j = st["jobs"][0]
    if j["state"] != "done":
        sys.exit(f"daemon_runs: a vanilla {model} alone did not finish: {j.get('reason', '')}")
    return max(j["region_bytes"], j["peak_footprint_bytes"])


class Daemon:
    """A daemon in the foreground in a private folder, stopped on exit."""

    def __init__(self, tensile, capacity, policy, gbps, admission="queue"):
        self.tensile = tensile
        self.dir = tempfile.mkdtemp(prefix="tsl-bench-")
        os.chmod(self.dir, 0o700)
        self.sock = os.path.join(self.dir, "d.sock")
        self.log = open(os.path.join(self.dir, "daemon.log"), "w")
        self.p = subprocess.Popen(
            [tensile, "serve", "--foreground", "--socket", self.sock, "--device-memory",
             str(capacity), "--pcie-gbps", str(gbps), "--policy", policy, "--admission",
             admission], stdout=self.log, stderr=subprocess.STDOUT)
        for _ in range(200):
            if os.path.exists(self.sock):
                return
            time.sleep(0.05)
        sys.exit(f"daemon_runs: the daemon did not start; its log: {self.log.name}")

    def submit(self, model, iterations, may_fail=False):
        """Submits a job; a refusal ends the bench unless may_fail (no
        admission control: the daemon fails a job that does not fit, and
        its status says so)."""
        _, b, s = shape(model)
        p = subprocess.run([self.tensile, "submit", "--socket", self.sock, "--model", model,
                            "--batch", str(b), "--image-size", str(s), "--dataset", "synthetic",
                            "--iterations", str(iterations)], capture_output=True, text=True)
        if p.returncode != 0 and not may_fail:
            sys.exit(f"daemon_runs: submit {model}: {p.stderr.strip()}")

    def status(self):
        p = subprocess.run([self.tensile, "status", "--socket", self.sock, "--json"],
                           capture_output=True, text=True)
        return json.loads(p.stdout) if p.returncode == 0 else None

    def wait_all(self, n, timeout=3600):
        """Until n jobs have ended; the last status."""
        t0 = time.time()
        while time.time() - t0 < timeout:
            st = self.status()
            if st and len(st["jobs"]) >= n and all(j["state"] in ("done", "failed")
                                                  for j in st["jobs"]):
                return st
            time.sleep(0.5)
        sys.exit(f"daemon_runs: jobs still running after {timeout} s; log {self.log.name}")

    def close(self):
        subprocess.run([self.tensile, "serve", "--stop", "--socket", self.sock],
                       capture_output=True)
        try:
            self.p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.p.kill()
        self.log.close()
        if os.environ.get("DAEMON_RUNS_KEEP"):
            print(f"daemon_runs: kept {self.dir}", file=sys.stderr)
        else:
            shutil.rmtree(self.dir, ignore_errors=True)


def scenario(a, policy, capacity, submissions, admission="queue"):
    """Runs the submissions [(delay_s, model)] under one daemon; returns its
    last status."""
    d = Daemon(a.tensile, capacity, policy, a.gbps, admission)
    try:
        for delay, model in submissions:
            time.sleep(delay)
            d.submit(model, a.iterations, may_fail=admission == "none")
        return d.wait_all(len(submissions))
    finally:
        d.close()


def spread(xs, fmt="{:.3f}"):
    if not xs:
        return "-"
    return f"{fmt.format(statistics.median(xs))} ({fmt.format(min(xs))}..{fmt.format(max(xs))})"


def compare(a, capacity, submissions):
    """The submissions under TENSILE and vanilla, --reps times, alternating;
    a row's figures."""
    msr, eor, cbr, peak_t, peak_v, replans, queued, ends = [], [], [], [], [], [], [], []
    for _ in range(a.reps):
        t = scenario(a, "tensile", capacity, submissions)
        v = scenario(a, "vanilla", capacity, submissions)
        pt, pv = t["global"]["peak_footprint_bytes"], v["global"]["peak_footprint_bytes"]
        m = 1 - pt / pv
        es = [jt["iter_ms"] / jv["iter_ms"] for jt, jv in zip(t["jobs"], v["jobs"])
              if jt["state"] == "done" and jv["state"] == "done"]
        msr.append(m)
        eor += es
        cbr.append(m / statistics.mean(es) if es else 0)
        peak_t.append(pt / MIB)
        peak_v.append(pv / MIB)
        replans += [j.get("replans", 0) for j in t["jobs"]]
        queued += [j.get("queued_ms", 0) / 1e3 for j in t["jobs"]]
        ends.append(sum(j["state"] == "done" for j in t["jobs"]))
        for name, st in (("tensile", t), ("vanilla", v)):
            for j in st["jobs"]:
                if j["state"] != "done":
                    print(f"daemon_runs: under {name}, job {j['id']} ({j['model']}) ended "
                          f"{j['state']}: {j.get('reason', '')}", file=sys.stderr)
    return dict(msr=spread(msr), eor=spread(eor), cbr=spread(cbr),
                peak_t=spread(peak_t, "{:.1f}"), peak_v=spread(peak_v, "{:.1f}"),
                replans=spread(replans, "{:.0f}"), queued=spread(queued, "{:.1f}"),
                done=f"{min(ends)}..{max(ends)} of {len(submissions)}")


HEADER = ("| jobs | device MiB | vanilla peak footprint MiB | TENSILE peak footprint MiB | MSR | "
          "EOR per job | CBR | replans per job | queued s per job | TENSILE jobs done |")


def row(name, cap, r):
    print(f"| {name} | {cap / MIB:.1f} | {r['peak_v']} | {r['peak_t']} | {r['msr']} | "
          f"{r['eor']} | {r['cbr']} | {r['replans']} | {r['queued']} | {r['done']} |")
    sys.stdout.flush()


def scale(a, fp):
    print("\n### scale: identical jobs submitted together (Fig. 6)\n")
    print(HEADER)
    print("|---" * 10 + "|")
    for model in a.models:
        for k in a.jobs:
            cap = int(k * fp[model] * 1.01)
            row(f"{k} x {model}", cap, compare(a, cap, [(0, model)] * k))


def mixed(a, fp):
    print("\n### mixed: the five models one by one in a random order (Table IV)\n")
    print(HEADER)
    print("|---" * 10 + "|")
    cap = int(sum(fp[m] for m in a.models) * 1.01)
    rows = []
    for rep in range(a.reps):
        rng = random.Random(rep + 1)
        order = list(a.models)
        rng.shuffle(order)
        subs = [(0 if i == 0 else rng.uniform(1, 3), m) for i, m in enumerate(order)]
        b = argparse.Namespace(**vars(a))
        b.reps = 1
        r = compare(b, cap, subs)
        rows.append(r)
        row(f"seed {rep + 1}: {', '.join(order)}", cap, r)


def tight(a, fp):
    print("\n### tight: the five models together on 60 % of their vanilla footprints\n")
    cap = int(sum(fp[m] for m in a.models) * 0.6)
    subs = [(0, m) for m in a.models]
    print(f"device {cap / MIB:.1f} MiB; vanilla footprints "
          + ", ".join(f"{m} {fp[m] / MIB:.1f}" for m in a.models) + " MiB\n")
    print("| daemon | jobs done | jobs failed | peak footprint MiB | mean iteration ms per "
          "job | queued s per job | wall s | why the failures failed |")
    print("|---|---|---|---|---|---|---|---|")
    for policy, adm in (("tensile", "queue"), ("vanilla", "none"), ("vanilla", "queue")):
        for rep in range(a.reps):
            t0 = time.time()
            st = scenario(a, policy, cap, subs, adm)
            wall = time.time() - t0
            js = st["jobs"]
            done = [j for j in js if j["state"] == "done"]
            failed = [j for j in js if j["state"] == "failed"]
            why = "; ".join(f"{j['model']}: {j.get('reason', '')[:90]}" for j in failed)
            print(f"| {policy}, admission {adm} | {len(done)} | {len(failed)} | "
                  f"{st['global']['peak_footprint_bytes'] / MIB:.1f} | "
                  f"{spread([j['iter_ms'] for j in done], '{:.0f}')} | "
                  f"{spread([j.get('queued_ms', 0) / 1e3 for j in done], '{:.1f}')} | "
                  f"{wall:.0f} | {why} |")
            sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tensile", default="build/tensile")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--gbps", type=float, default=2.0)
    ap.add_argument("--iterations", type=int, default=10)
    ap.add_argument("--experiments", default="scale,mixed,tight")
    ap.add_argument("--models", default=",".join(m[0] for m in MODELS))
    ap.add_argument("--jobs", default="1,2,3,4")
    a = ap.parse_args()
    a.tensile = os.path.abspath(a.tensile)
    a.models = a.models.split(",")
    a.jobs = [int(x) for x in a.jobs.split(",")]
    for m in a.models:
        shape(m)
    ver = subprocess.run([a.tensile, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, "
          f"{platform.platform()}; {ver}; channels at {a.gbps} GB/s shared by every job; "
          f"each job {a.iterations} iterations with the default threads; {a.reps} repeats; "
          f"shapes: " + ", ".join(f"{m} b{b} {s}px" for m, b, s in MODELS if m in a.models))
    fp = {m: vanilla_footprint(a, m) for m in a.models}
    t0 = time.time()
    for e in a.experiments.split(","):
        {"scale": scale, "mixed": mixed, "tight": tight}[e](a, fp)
    print(f"\n{time.time() - t0:.0f} s; command: bench/daemon_runs.py " + " ".join(sys.argv[1:]))


if __name__ == "__main__":
    main()
