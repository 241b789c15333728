#!/usr/bin/env python3
"""Vanilla training step: Tensile beside PyTorch on this CPU, time and memory.

What it measures
----------------
Time. For each model and thread count, R repetitions (default 3) of one
Tensile run and one PyTorch run, alternating (which side goes first
alternates too), each run a fresh process on the same shapes:

  Tensile  `tensile train --model M --dataset synthetic --batch B
           --image-size S --train-examples B*(N+1) --test-examples B
           --threads T --json --quiet`: one epoch of N+1 steps; its
           `iter_ms` is the upper median of the N+1 step times
           (sorted[(N+1)//2]), each step timed from the batch's upload to the
           last kernel's end, the first step (oneDNN primitive creation)
           included in the sample.
  PyTorch  this script's worker in a private venv: torch.set_num_threads(T),
           OMP_NUM_THREADS=T, eager mode, model.train(); N+1 steps on one
           fixed synthetic batch, each timed with time.perf_counter() around
           zero_grad(set_to_none) + forward + cross-entropy + backward +
           optimizer step + loss.item(); the same statistic as Tensile,
           sorted[(N+1)//2] over all N+1 steps, warm-up included in the sample
           exactly as Tensile's first step is.

Both sides: softmax cross-entropy (mean over the batch), SGD momentum 0.9,
dampening 0, no Nesterov, lr 0.02 (Tensile's default for sgd), weight decay
0, the model's dropout active (training mode). The table gives, over the R
runs, the median of the per-run values and their spread [min..max].

Memory. One training step in steady state (the second step: momentum buffers
exist, the first step's gradients were released by zero_grad(set_to_none)).
  Tensile  `peak_load_bytes` (bytes of live tensors at the vanilla
           executor's peak: parameters, buffers, momentum, the batch, saved
           activations, gradients) and `footprint_bytes` (the arena's
           high-water mark, fragmentation included) of the same `tensile train
           --json` (the first 1-thread run when timing ran, else a 2-step run).
  PyTorch  the peak, over every op of the step, of the sum of nbytes of the
           distinct live tensor storages: a TorchDispatchMode records each op
           output's untyped storage (views and in-place results share it,
           counted once) and a weakref.finalize on it notices its release;
           the parameters, buffers, momentum buffers and the batch that exist
           before the step are counted from the start. Workspace that a kernel
           allocates and frees inside one op is not tensor storage and is not
           counted; the "allocator" column adds it: the peak of the CPU
           allocator's bytes during the third step (torch.profiler,
           profile_memory=True) on top of the same starting bytes.

The PyTorch models are tests/ref/torch_step.py's MODELS, the project's
PyTorch twin of each Tensile model, validated parameter by parameter against
Tensile's own step (torch_step.py builds resnet, vgg, inception3 and
densenet121 from torchvision's definitions, with Tensile's changes to VGG, so
the venv holds torchvision too). Classes: 10 for mlp and cnn (1x28x28), 1000
for the others, as `tensile train --dataset synthetic`.

PyTorch comes from PyPI into a private venv (default build-bench/venv-torch),
installed by this script when it is missing: pip resolves torch, torchvision,
numpy and pillow (--dry-run --report) and everything it resolved is installed
with --no-deps except triton (the compiler of torch.compile, 1 GiB, unused in
eager mode). The nvidia-* CUDA libraries stay: libtorch links them, and
`import torch` fails without them. If that set does not import, the plain
`pip install torch torchvision numpy pillow` is tried. Neither the library
nor the tests need PyTorch.

Usage
-----
  bench/bench_vs_pytorch.py [--models cnn,resnet18] [--threads 1,2] [--reps 3]
      [--steps 12] [--shape resnet50=16x64,...] [--out FILE.md]
      [--time-only | --memory-only] [--tensile build/tensile]
      [--venv build-bench/venv-torch] [--raw FILE.json] [--explain]
      [--device-memory SIZE]

--explain lists, per model, the largest tensors live at PyTorch's memory
peak (op, dtype, shape) on stderr; --raw keeps every run's numbers.

Progress goes to stderr; the machine, the versions and the two Markdown
tables go to stdout (and to --out).
"""
import argparse
import ctypes
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TORCH_STEP = os.path.join(REPO, "tests", "ref", "torch_step.py")

# model: (batch, image size); the shapes, the big three at batch 16
DEFAULT_SHAPES = {
    "cnn": (64, 28),
    "resnet18": (32, 32),
    "resnet50": (16, 64),
    "densenet121": (16, 64),
    "inception3": (16, 96),
    "vgg11": (32, 32),
}
DEFAULT_MODELS = ["cnn", "resnet18", "resnet50", "densenet121", "inception3", "vgg11"]
# Tensile's tsl_model_cfg_default: channels and classes (synthetic data)
SMALL = {"mlp", "cnn"}  # 1x28x28, 10 classes
DEFAULT_SIZE = {"mlp": 28, "cnn": 28, "inception3": 299, "inception4": 299}
LR, MOMENTUM = 0.02, 0.9
PIP_PACKAGES = ["torch", "torchvision", "numpy", "pillow"]
SKIP_PACKAGES = {"triton"}
MIB = 1024.0 * 1024.0


def log(msg):
    print(msg, file=sys.stderr, flush=True)


def die(msg, code=1):
    log("bench_vs_pytorch: " + msg)
    sys.exit(code)


def channels_of(m):
    return 1 if m in SMALL else 3


def classes_of(m):
    return 10 if m in SMALL else 1000


# ============================================================================
# The PyTorch worker: runs inside the venv's python (`--worker KIND ...`)
# ============================================================================

def _load_twin(threads):
    """torch and the model constructors of tests/ref/torch_step.py."""
    import importlib.util
    import torch
    spec = importlib.util.spec_from_file_location("torch_step", TORCH_STEP)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    # torch_step.py sets float64 and its own thread count at import: undo both
    torch.set_default_dtype(torch.float32)
    torch.set_num_threads(threads)
    return torch, mod


def _setup(a):
    torch, twin = _load_twin(a.threads)
    import torch.nn.functional as F
    if a.model not in twin.MODELS:
        raise SystemExit("model %s is not in tests/ref/torch_step.py (has: %s)" %
                         (a.model, ", ".join(sorted(twin.MODELS))))
    torch.manual_seed(0)
    model = twin.MODELS[a.model](a.channels, a.size, a.classes)
    model.train()
    opt = torch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM, dampening=0,
                          nesterov=False, weight_decay=0)
    x = torch.randn(a.batch, a.channels, a.size, a.size)
    y = torch.randint(0, a.classes, (a.batch,))

    def step(phase=lambda name: None):
        """One training step; phase(name) marks forward, backward, optimizer."""
        opt.zero_grad(set_to_none=True)
        phase("forward")
        loss = F.cross_entropy(model(x), y)
        phase("backward")
        loss.backward()
        phase("optimizer")
        opt.step()
        return loss.item()
    return torch, model, opt, x, y, step


def worker_info():
    import torch
    try:
        import torchvision
        tv = torchvision.__version__
    except Exception as e:  # noqa: BLE001 - reported, not fatal here
        tv = "not importable (%s)" % e
    pi = torch.__config__.parallel_info().strip().splitlines()
    return {"torch": torch.__version__, "torch_path": os.path.realpath(torch.__file__),
            "torchvision": tv, "python": sys.version.split()[0], "prefix": sys.prefix,
            "parallel_info": pi, "mkldnn": bool(torch.backends.mkldnn.is_available())}


def worker_time(a):
    torch, model, opt, x, y, step = _setup(a)
    times, loss = [], None
    for _ in range(a.steps + 1):
        t0 = time.perf_counter()
        loss = step()
        times.append((time.perf_counter() - t0) * 1e3)
    s = sorted(times)
    return {"per_step_ms": times, "iter_ms": s[len(s) // 2], "warmup_ms": times[0],
            "median_timed_ms": statistics.median(times[1:]) if len(times) > 1 else times[0],
            "loss": loss, "threads": torch.get_num_threads()}


def make_counter(torch):
    """A TorchDispatchMode counting the bytes of distinct live tensor
    storages (each op's outputs; releases seen by weakref.finalize)."""
    import weakref
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten

    class Counter(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.live = {}  # StorageImpl address -> (nbytes, phase, op, shape, dtype)
            self.cur = 0
            self.peak = 0
            self.peak_at = None
            self.peak_live = {}
            self.phase = "persistent"
            self.op = "-"

        def track(self, t, phase=None, op=None):
            st = t.untyped_storage()
            k = st._cdata
            if k in self.live:
                return
            n = st.nbytes()
            self.live[k] = (n, phase or self.phase, op or self.op, tuple(t.shape),
                            str(t.dtype).replace("torch.", ""))
            self.cur += n
            weakref.finalize(st, self._free, k)

        def _free(self, k):
            ent = self.live.pop(k, None)
            if ent:
                self.cur -= ent[0]

        def note(self):
            if self.cur > self.peak:
                self.peak = self.cur
                self.peak_at = (self.phase, self.op)
                self.peak_live = dict(self.live)

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            self.op = str(func.overloadpacket.__name__)
            for t in tree_flatten(out)[0]:
                if isinstance(t, torch.Tensor):
                    self.track(t)
            self.note()
            return out
    return Counter()


def worker_memory(a):
    torch, model, opt, x, y, step = _setup(a)
    step()  # step 1: creates the momentum buffers
    opt.zero_grad(set_to_none=True)  # what step 2 begins with
    c = make_counter(torch)
    for n, p in model.named_parameters():
        c.track(p, "persistent", "param " + n)
    for n, b in model.named_buffers():
        c.track(b, "persistent", "buffer " + n)
    for st in opt.state.values():
        for n, t in st.items():
            if isinstance(t, torch.Tensor):
                c.track(t, "persistent", "optimizer " + n)
    persistent = c.cur
    c.track(x, "data", "input")
    c.track(y, "data", "label")
    start = c.cur
    c.note()

    def phase(p):
        c.phase = p
    with c:
        step(phase)
    by_phase = {}
    for n, ph, _, _, _ in c.peak_live.values():
        by_phase[ph] = by_phase.get(ph, 0) + n
    top = sorted(((n, ph, op, list(sh), dt) for n, ph, op, sh, dt in c.peak_live.values()
                  if ph not in ("persistent", "data")), reverse=True)
    res = {"persistent_bytes": persistent, "start_bytes": start, "peak_bytes": c.peak,
           "peak_phase": c.peak_at[0] if c.peak_at else None,
           "peak_op": c.peak_at[1] if c.peak_at else None,
           "peak_by_phase": by_phase, "peak_tensors": top[:a.top],
           "peak_tensor_count": len(top)}
    # the CPU allocator's peak (kernel workspace included), step 3
    try:
        from torch.profiler import ProfilerActivity, profile
        opt.zero_grad(set_to_none=True)
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            step()
        evs = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
        cur = top_ = 0
        for e in sorted(evs, key=lambda e: e.start_ns()):
            cur += e.nbytes()
            top_ = max(top_, cur)
        res["allocator_peak_bytes"] = start + top_
    except Exception as e:  # noqa: BLE001 - the column is then n/a
        res["allocator_error"] = "%s: %s" % (type(e).__name__, e)
    return res


def worker_main(argv):
    ap = argparse.ArgumentParser(prog="bench_vs_pytorch.py --worker")
    ap.add_argument("--worker", choices=["info", "time", "memory"], required=True)
    ap.add_argument("--model")
    ap.add_argument("--batch", type=int)
    ap.add_argument("--size", type=int)
    ap.add_argument("--channels", type=int)
    ap.add_argument("--classes", type=int)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--steps", type=int, default=12)
    ap.add_argument("--top", type=int, default=12)
    a = ap.parse_args(argv)
    fn = {"info": lambda a: worker_info(), "time": worker_time, "memory": worker_memory}
    print(json.dumps(fn[a.worker](a)), flush=True)
    return 0


# ============================================================================
# The driver (any python3; never imports torch itself)
# ============================================================================

def run(cmd, env=None, check=True, capture=True, timeout=None):
    r = subprocess.run(cmd, env=env, stdout=subprocess.PIPE if capture else None,
                       stderr=subprocess.PIPE if capture else None, text=True, timeout=timeout)
    if check and r.returncode != 0:
        tail = ((r.stderr or "") + (r.stdout or ""))[-3000:]
        raise RuntimeError("%s exited with %d:\n%s" % (" ".join(cmd[:6]) + " ...", r.returncode,
                                                       tail))
    return r


def last_json(text):
    for line in reversed(text.strip().splitlines()):
        line = line.strip()
        if line.startswith("{"):
            return json.loads(line)
    raise ValueError("no JSON line in the output:\n" + text[-2000:])


def clean_env(threads=None):
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONHOME", None)
    env["PYTHONNOUSERSITE"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ in tests/ref
    if threads:
        for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
            env[v] = str(threads)
    return env


# ---- PyTorch in a private venv ---------------------------------------------

def venv_python(venv):
    return os.path.join(venv, "bin", "python")


def probe_torch(venv):
    """worker_info() from the venv, or None (with the reason) when torch does
    not import there or is not the venv's own."""
    py = venv_python(venv)
    if not os.path.exists(py):
        return None, "no venv at %s" % venv
    r = run([py, os.path.abspath(__file__), "--worker", "info"], env=clean_env(1), check=False)
    if r.returncode != 0:  # the exception's last line: "ImportError: libcufile.so.0: ..."
        msg = (r.stderr or r.stdout or "exit status %d" % r.returncode).strip().splitlines()
        return None, "torch does not import: " + msg[-1]
    info = last_json(r.stdout)
    if not info["torch_path"].startswith(os.path.realpath(venv) + os.sep):
        return None, "torch %s imported from %s, outside the venv" % (info["torch"],
                                                                    info["torch_path"])
    if info["torchvision"].startswith("not importable"):
        return None, "torchvision " + info["torchvision"]
    return info, None


def du_bytes(path):
    tot = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                tot += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return tot


def install_torch(venv):
    """Creates the venv and installs PyTorch from PyPI (see the docstring)."""
    t0 = time.time()
    py = venv_python(venv)
    log("PyTorch: installing from PyPI into %s" % venv)
    if not os.path.exists(py):
        os.makedirs(os.path.dirname(os.path.abspath(venv)), exist_ok=True)
        r = run([sys.executable, "-m", "venv", venv], check=False)
        if r.returncode != 0:
            die("cannot create the venv %s with %s -m venv (on Debian: apt-get install "
                "python3-venv):\n%s" % (venv, sys.executable, r.stderr.strip()))
    pip = [py, "-m", "pip"]
    env = clean_env()
    ver = run(pip + ["--version"], env=env).stdout.split()[1]
    if tuple(int(p) for p in ver.split(".")[:2] if p.isdigit()) < (22, 2):
        log("PyTorch: pip %s lacks --dry-run --report; upgrading pip in the venv" % ver)
        run(pip + ["install", "--quiet", "--upgrade", "pip"], env=env, capture=False)
    installed = None
    with tempfile.TemporaryDirectory() as td:
        rep = os.path.join(td, "report.json")
        log("PyTorch: resolving %s on PyPI" % " ".join(PIP_PACKAGES))
        r = run(pip + ["install", "--dry-run", "--quiet", "--ignore-installed", "--report", rep]
                + PIP_PACKAGES, env=env, check=False)
        if r.returncode == 0:
            items = json.load(open(rep))["install"]
            pins = ["%s==%s" % (i["metadata"]["name"], i["metadata"]["version"]) for i in items
                    if i["metadata"]["name"].lower() not in SKIP_PACKAGES]
            log("PyTorch: installing %d packages with --no-deps (all pip resolved but %s)" %
                (len(pins), ", ".join(sorted(SKIP_PACKAGES))))
            r = run(pip + ["install", "--no-deps", "--quiet"] + pins, env=env, check=False,
                    capture=False)
            if r.returncode == 0:
                installed = pins
        else:
            log("PyTorch: pip could not resolve the packages:\n" + r.stderr.strip()[-2000:])
    info, why = probe_torch(venv) if installed else (None, "the minimal install failed")
    if not info:
        log("PyTorch: %s; trying the complete `pip install %s`" % (why, " ".join(PIP_PACKAGES)))
        r = run(pip + ["install", "--quiet"] + PIP_PACKAGES, env=env, check=False, capture=False)
        info, why = probe_torch(venv)
        if r.returncode != 0 or not info:
            die("FAILED to install PyTorch from PyPI into %s (pip exit status %d; %s); see pip's "
                "messages above" % (venv, r.returncode, why))
        installed = ["(complete install) " + " ".join(PIP_PACKAGES)]
    log("PyTorch: installed in %.0f s, venv %.2f GiB: %s" %
        (time.time() - t0, du_bytes(venv) / 1024.0 ** 3, " ".join(installed)))
    return info


def ensure_torch(venv):
    info, why = probe_torch(venv)
    if info:
        return info
    log("PyTorch: not usable in %s (%s)" % (venv, why))
    return install_torch(venv)


# ---- machine and versions --------------------------------------------------

def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def mem_total():
    try:
        for line in open("/proc/meminfo"):
            if line.startswith("MemTotal"):
                return "%.1f GiB" % (int(line.split()[1]) / 1024.0 ** 2)
    except OSError:
        pass
    return "?"


def linked_lib(binary, stem):
    """Path of the shared library whose name starts with stem that binary
    loads (ldd), or None."""
    try:
        out = run(["ldd", binary], check=False).stdout
    except OSError:
        return None
    for line in out.splitlines():
        f = line.split()
        if f and f[0].startswith(stem) and "=>" in f and len(f) > 2 and f[2].startswith("/"):
            return f[2]
    return None


def onednn_version(binary):
    lib = linked_lib(binary, "libdnnl")
    if not lib:
        return "not linked dynamically"

    class V(ctypes.Structure):
        _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int),
                    ("hash", ctypes.c_char_p), ("cpu_runtime", ctypes.c_uint),
                    ("gpu_runtime", ctypes.c_uint)]
    try:
        f = ctypes.CDLL(lib).dnnl_version
        f.restype = ctypes.POINTER(V)
        v = f().contents
        return "%d.%d.%d (git hash %s; %s)" % (v.major, v.minor, v.patch,
                                               (v.hash or b"?").decode()[:12], lib)
    except (OSError, AttributeError) as e:
        return "%s (%s)" % (lib, e)


def tensile_versions(tensile):
    r = run([tensile, "--version"], check=False)
    ver = (r.stdout or r.stderr).strip().splitlines()[0] if r.returncode == 0 else "?"
    g = run(["git", "-C", REPO, "describe", "--always", "--dirty", "--tags"], check=False)
    return {"tensile": ver, "git": g.stdout.strip() if g.returncode == 0 else "?",
            "onednn": onednn_version(tensile)}


# ---- one run of each side ----------------------------------------------------

def tensile_train(tensile, m, b, s, threads, steps, device_memory):
    cmd = [tensile, "train", "--model", m, "--dataset", "synthetic", "--batch", str(b),
           "--image-size", str(s), "--train-examples", str(b * (steps + 1)),
           "--test-examples", str(b), "--threads", str(threads), "--json", "--quiet"]
    if device_memory:
        cmd += ["--device-memory", device_memory]
    r = run(cmd, env=clean_env(threads), check=False)
    if r.returncode != 0:
        raise RuntimeError("%s\nexited with %d: %s" % (" ".join(cmd), r.returncode,
                                                       r.stderr.strip()[-2000:]))
    return last_json(r.stdout)


def torch_worker(venv, kind, m, b, s, threads, steps):
    cmd = [venv_python(venv), os.path.abspath(__file__), "--worker", kind, "--model", m,
           "--batch", str(b), "--size", str(s), "--channels", str(channels_of(m)),
           "--classes", str(classes_of(m)), "--threads", str(threads), "--steps", str(steps)]
    r = run(cmd, env=clean_env(threads), check=False)
    if r.returncode != 0:
        raise RuntimeError("PyTorch worker (%s %s, %d threads) exited with %d:\n%s" %
                           (kind, m, threads, r.returncode, r.stderr.strip()[-3000:]))
    return last_json(r.stdout)


# ---- tables --------------------------------------------------------------------

def spread(vals):
    return statistics.median(vals), min(vals), max(vals)


def fmt_ms(vals):
    if not vals:
        return "-"
    med, lo, hi = spread(vals)
    return "%.1f [%.1f..%.1f]" % (med, lo, hi)


def md_table(head, rows):
    out = ["| " + " | ".join(head) + " |",
           "|" + "|".join("---" if i < 1 else "---:" for i in range(len(head))) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def parse_shapes(items):
    shapes = dict(DEFAULT_SHAPES)
    for item in items:
        for part in filter(None, item.split(",")):
            try:
                m, bs = part.split("=")
                b, s = bs.lower().split("x")
                shapes[m.strip()] = (int(b), int(s))
            except ValueError:
                die("--shape %r: expected MODEL=BATCHxSIZE, e.g. resnet50=16x64" % part, 2)
    return shapes


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        return worker_main(sys.argv[1:])
    ap = argparse.ArgumentParser(
        description="Tensile's vanilla training step beside PyTorch's (eager, CPU): "
        "time per step and peak memory, same models and shapes.",
        epilog="Shapes by default: " + ", ".join("%s %dx%d" % (m, b, s) for m, (b, s) in
                                                  DEFAULT_SHAPES.items()) +
        " (batch x image size); channels and classes as tensile train --dataset synthetic.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated")
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated")
    ap.add_argument("--reps", type=int, default=3, help="interleaved runs per side")
    ap.add_argument("--steps", type=int, default=12, help="timed steps per run (after 1 warm-up)")
    ap.add_argument("--shape", action="append", default=[],
                    help="MODEL=BATCHxSIZE[,...] overrides a shape (repeatable)")
    ap.add_argument("--out", help="also write the report (Markdown) here")
    ap.add_argument("--raw", help="also write every run's numbers here (JSON)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--time-only", action="store_true")
    g.add_argument("--memory-only", action="store_true")
    ap.add_argument("--tensile", default=os.path.join(REPO, "build", "tensile"),
                    help="the tensile binary (this script never builds it)")
    ap.add_argument("--venv", default=os.path.join(REPO, "build-bench", "venv-torch"),
                    help="PyTorch's private venv (created and filled when missing)")
    ap.add_argument("--device-memory",
                    help="tensile train --device-memory (default: tensile's own, 4GiB)")
    ap.add_argument("--explain", action="store_true",
                    help="list the largest tensors live at PyTorch's memory peak (stderr)")
    a = ap.parse_args()

    models = [m.strip() for m in a.models.split(",") if m.strip()]
    try:
        threads = [int(t) for t in a.threads.split(",") if t.strip()]
    except ValueError:
        die("--threads %r: expected integers, e.g. 1,2" % a.threads, 2)
    if not models or not threads or min(threads) < 1 or a.reps < 1 or a.steps < 1:
        die("nothing to do: check --models, --threads, --reps, --steps", 2)
    if "unet" in models:
        die("unet (a per-pixel loss) is not part of this comparison", 2)
    shapes = parse_shapes(a.shape)
    for m in models:
        shapes.setdefault(m, (16, DEFAULT_SIZE.get(m, 224)))
    tensile = os.path.abspath(a.tensile)
    if not (os.path.isfile(tensile) and os.access(tensile, os.X_OK)):
        die("no tensile binary at %s: build it first (make, or cmake --build build), or "
            "pass --tensile PATH" % tensile)
    if not os.path.isfile(TORCH_STEP):
        die("missing %s (the PyTorch twin of the models)" % TORCH_STEP)
    venv = os.path.abspath(a.venv)

    tinfo = ensure_torch(venv)
    tver = tensile_versions(tensile)
    lines = []

    def emit(s=""):
        lines.append(s)
        print(s, flush=True)

    emit("# Tensile vs PyTorch: vanilla training step on the CPU")
    emit()
    emit("- machine: %s; CPU %s, %d logical cores, %s memory" %
         (" ".join(platform.uname()[i] for i in (0, 2, 4)), cpu_model(), os.cpu_count() or 0,
          mem_total()))
    emit("- Tensile: %s (git %s), fast kernels (oneDNN and own loops, one OpenMP pool); oneDNN %s" %
         (tver["tensile"], tver["git"], tver["onednn"]))
    emit("- PyTorch: %s (%s), torchvision %s, Python %s, eager, PyPI wheel in %s" %
         (tinfo["torch"], os.path.dirname(tinfo["torch_path"]), tinfo["torchvision"],
          tinfo["python"], venv))
    pi = [l.strip() for l in tinfo["parallel_info"] if l.strip() and not l.strip().startswith(
        ("Environment variables", "OMP_NUM_THREADS", "MKL_NUM_THREADS"))]
    emit("- PyTorch parallel_info (a 1-thread worker): " + "; ".join(pi))
    emit("- step: softmax cross-entropy, SGD momentum %.1f lr %g, weight decay 0; "
         "synthetic data; per run: 1 warm-up + %d steps, statistic sorted[n//2] over all "
         "%d steps on both sides; %d interleaved runs per side, median [min..max] of the runs"
         % (MOMENTUM, LR, a.steps, a.steps + 1, a.reps))
    emit()

    raw = {"tensile": tver, "torch": tinfo, "time": [], "memory": []}
    first_tensile = {}  # model -> the first 1-thread tensile train JSON (for memory)

    if not a.memory_only:
        rows = []
        for m in models:
            b, s = shapes[m]
            for t in threads:
                tv, pv = [], []
                for r in range(a.reps):
                    order = ("tensile", "torch") if r % 2 == 0 else ("torch", "tensile")
                    for side in order:
                        log("time: %s b%d %dx%d, %d thread%s, run %d/%d: %s ..." %
                            (m, b, s, s, t, "s" if t > 1 else "", r + 1, a.reps, side))
                        try:
                            if side == "tensile":
                                j = tensile_train(tensile, m, b, s, t, a.steps, a.device_memory)
                                tv.append(j["iter_ms"])
                                if t == 1:
                                    first_tensile.setdefault(m, j)
                                raw["time"].append({"side": side, "model": m, "threads": t,
                                                    "rep": r, **j})
                                log("    tensile %.1f ms/step" % j["iter_ms"])
                            else:
                                j = torch_worker(venv, "time", m, b, s, t, a.steps)
                                pv.append(j["iter_ms"])
                                raw["time"].append({"side": side, "model": m, "threads": t,
                                                    "rep": r, **j})
                                log("    pytorch %.1f ms/step (warm-up %.1f)" %
                                    (j["iter_ms"], j["warmup_ms"]))
                        except (RuntimeError, ValueError) as e:
                            log("    FAILED: %s" % e)
                ratio = ("%.2f" % (statistics.median(tv) / statistics.median(pv))
                         if tv and pv else "-")
                rows.append([m, b, "%dx%dx%d" % (channels_of(m), s, s), t, fmt_ms(tv),
                             fmt_ms(pv), ratio])
        emit("## Time per training step (ms)")
        emit()
        emit(md_table(["model", "batch", "input", "threads", "Tensile ms/step",
                       "PyTorch ms/step", "Tensile/PyTorch"], rows))
        emit()

    if not a.time_only:
        rows = []
        for m in models:
            b, s = shapes[m]
            log("memory: %s b%d %dx%d ..." % (m, b, s, s))
            tj = first_tensile.get(m)
            try:
                if tj is None:
                    tj = tensile_train(tensile, m, b, s, 1, 1, a.device_memory)
                info = last_json(run([tensile, "info", "--model", m, "--batch", str(b),
                                      "--image-size", str(s), "--json"]).stdout)
            except (RuntimeError, ValueError) as e:
                log("    FAILED (tensile): %s" % e)
                tj, info = None, None
            try:
                pj = torch_worker(venv, "memory", m, b, s, 1, 1)
            except (RuntimeError, ValueError) as e:
                log("    FAILED (pytorch): %s" % e)
                pj = None
            raw["memory"].append({"model": m, "batch": b, "size": s, "tensile": tj,
                                  "tensile_info": info, "torch": pj})

            def mib(v):
                return "%.1f" % (v / MIB) if v is not None else "-"
            t_fp = tj["footprint_bytes"] if tj else None
            t_ld = tj["peak_load_bytes"] if tj else None
            t_ps = info["persistent_bytes"] if info else None
            p_pk = pj["peak_bytes"] if pj else None
            p_al = pj.get("allocator_peak_bytes") if pj else None
            p_ps = pj["persistent_bytes"] if pj else None
            rows.append([m, b, "%dx%dx%d" % (channels_of(m), s, s), mib(t_fp), mib(t_ld),
                         mib(p_pk), mib(p_al),
                         "%.2f" % (t_ld / p_pk) if t_ld and p_pk else "-",
                         "%.2f" % (t_fp / p_pk) if t_fp and p_pk else "-",
                         "%s / %s" % (mib(t_ps), mib(p_ps)),
                         "%s / %s" % (mib(t_ld - t_ps) if t_ld and t_ps else "-",
                                      mib(p_pk - p_ps) if p_pk and p_ps else "-")])
            if pj:
                bp = pj["peak_by_phase"]
                log("    pytorch peak %.1f MiB in %s (op %s): %s" %
                    (pj["peak_bytes"] / MIB, pj["peak_phase"], pj["peak_op"],
                     ", ".join("%s %.1f" % (k, v / MIB) for k, v in bp.items())))
                if a.explain:
                    for n, ph, op, sh, dt in pj["peak_tensors"]:
                        log("      %8.2f MiB  %-9s %-32s %s %s" % (n / MIB, ph, op, dt, sh))
        emit("## Peak memory of one training step (MiB)")
        emit()
        emit(md_table(["model", "batch", "input", "Tensile footprint", "Tensile load",
                       "PyTorch live storage", "PyTorch allocator", "load/PyTorch",
                       "footprint/PyTorch", "persistent T / P", "transient T / P"], rows))
        emit()
        emit("Tensile load: live tensors at the vanilla executor's peak; footprint: the "
             "arena's high-water mark. PyTorch live storage: distinct live tensor storages "
             "at the step's peak (TorchDispatchMode); allocator: the CPU allocator's peak "
             "(kernel workspace included). Persistent: parameters, buffers, momentum; "
             "transient: peak minus persistent (batch, saved activations, gradients).")
        emit()

    if a.out:
        with open(a.out, "w") as f:
            f.write("\n".join(lines) + "\n")
        log("wrote %s" % a.out)
    if a.raw:
        with open(a.raw, "w") as f:
            json.dump(raw, f, indent=1)
        log("wrote %s" % a.raw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
