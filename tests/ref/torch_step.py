#!/usr/bin/python3
"""Recompute one Tensile training step with PyTorch (float64) and compare.

Reads directories written by `tsl_dump_step MODEL ... DIR f64`: the
parameters and batch-norm buffers as Tensile initialised them, the batch,
the dropout masks Tensile drew, and Tensile's loss, every parameter gradient
and the buffers after the step, all in float64 from Tensile's reference
kernels. Rebuilds each model independently of Tensile: torchvision's own
definitions where torchvision has the model (resnet18/50, vgg11/16/19,
inception_v3, densenet121), a plain definition written here from the
documented architecture otherwise (mlp, cnn, inception4 after timm's
inception_v4, unet). Loads Tensile's initial values by name (Tensile's names
are torchvision's / timm's state_dict keys; the sets must be equal), applies
the same dropout masks, computes the softmax cross-entropy (mean over every
position: batch, and pixels for unet) and its gradients with autograd, and
the running statistics after one training-mode forward (momentum 0.1,
unbiased variance, as torch).

Per tensor the error is max|tensile - torch| / max|torch|; for a buffer it is
taken on the step's update (after - before), so that the 0.9 * initial value
does not hide an error in the batch statistics. Exits 1 if any error reaches
the tolerance, if a name or shape differs, or if a dump is missing.

  torch_step.py [--tol T] [--delete] [--noise] [--expect N] DIR...
      DIR "-": read lines "DIR [TOL]" from stdin (TOL: that dump's
      tolerance), so that dumps can be compared while the next is written.

"""
import argparse
import json
import math
import os
import shutil
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision

torch.set_default_dtype(torch.float64)
torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))


# ---- models torchvision does not define ------------------------------------

class MLP(nn.Module):
    """flatten -> fc1 512 -> ReLU -> fc2 256 -> ReLU -> fc3 classes."""

    def __init__(self, c, s, k):
        super().__init__()
        self.fc1 = nn.Linear(c * s * s, 512)
        self.fc2 = nn.Linear(512, 256)
        self.fc3 = nn.Linear(256, k)

    def forward(self, x):
        x = torch.flatten(x, 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class CNN(nn.Module):
    """conv 5x5 32 pad 2 -> ReLU -> maxpool 2 -> conv 5x5 64 pad 2 -> ReLU ->
    maxpool 2 -> flatten -> linear 512 -> ReLU -> linear classes."""

    def __init__(self, c, s, k):
        super().__init__()
        self.conv1 = nn.Conv2d(c, 32, 5, padding=2)
        self.conv2 = nn.Conv2d(32, 64, 5, padding=2)
        self.fc1 = nn.Linear(64 * (s // 4) * (s // 4), 512)
        self.fc2 = nn.Linear(512, k)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


class UNet(nn.Module):
    """U-Net with padding 1: five levels of 64..1024 channels, each two 3x3
    conv (bias) + ReLU, 2x2 max pools down; up: 2x2 stride-2 transposed conv
    (bias) halving the channels, cat([skip, up]), two 3x3 conv + ReLU; a 1x1
    conv to the classes. Names enc<l>.conv<k>, up<l>, dec<l>.conv<k>, outc."""

    def __init__(self, c, s, k):
        super().__init__()
        ch = [64, 128, 256, 512, 1024]
        cin = c
        for lv in range(5):
            self.add_module("enc%d" % (lv + 1), self._double(cin, ch[lv]))
            cin = ch[lv]
        for lv in range(4, 0, -1):  # the up conv landing on level lv
            self.add_module("up%d" % lv, nn.ConvTranspose2d(ch[lv], ch[lv - 1], 2, stride=2))
            self.add_module("dec%d" % lv, self._double(2 * ch[lv - 1], ch[lv - 1]))
        self.outc = nn.Conv2d(64, k, 1)

    @staticmethod
    def _double(cin, cout):
        m = nn.Module()
        m.conv1 = nn.Conv2d(cin, cout, 3, padding=1)
        m.conv2 = nn.Conv2d(cout, cout, 3, padding=1)
        return m

    def forward(self, x):
        skips = []
        for lv in range(1, 6):
            if lv > 1:
                x = F.max_pool2d(x, 2)
            blk = getattr(self, "enc%d" % lv)
            x = F.relu(blk.conv2(F.relu(blk.conv1(x))))
            skips.append(x)
        for lv in range(4, 0, -1):
            u = getattr(self, "up%d" % lv)(x)
            x = torch.cat([skips[lv - 1], u], 1)
            blk = getattr(self, "dec%d" % lv)
            x = F.relu(blk.conv2(F.relu(blk.conv1(x))))
        return self.outc(x)


# Inception-v4 as timm's inception_v4 defines it (conv without bias, batch
# norm eps 0.001, ReLU; branch average pools exclude the padding; no dropout
# at timm's default drop rate 0), with timm's module names.

class BasicConv(nn.Module):
    def __init__(self, cin, cout, k, s=1, p=0):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, stride=s, padding=p, bias=False)
        self.bn = nn.BatchNorm2d(cout, eps=0.001)

    def forward(self, x):
        return F.relu(self.bn(self.conv(x)))


def _seq(*mods):
    return nn.Sequential(*mods)


def _avg():
    return nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False)


class Mixed3a(nn.Module):
    def __init__(self):
        super().__init__()
        self.maxpool = nn.MaxPool2d(3, stride=2)
        self.conv = BasicConv(64, 96, 3, 2)

    def forward(self, x):
        return torch.cat((self.maxpool(x), self.conv(x)), 1)


class Mixed4a(nn.Module):
    def __init__(self):
        super().__init__()
        self.branch0 = _seq(BasicConv(160, 64, 1), BasicConv(64, 96, 3))
        self.branch1 = _seq(BasicConv(160, 64, 1), BasicConv(64, 64, (1, 7), 1, (0, 3)),
                            BasicConv(64, 64, (7, 1), 1, (3, 0)), BasicConv(64, 96, 3))

    def forward(self, x):
        return torch.cat((self.branch0(x), self.branch1(x)), 1)


class Mixed5a(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = BasicConv(192, 192, 3, 2)
        self.maxpool = nn.MaxPool2d(3, stride=2)

    def forward(self, x):
        return torch.cat((self.conv(x), self.maxpool(x)), 1)


class InceptionA(nn.Module):
    def __init__(self):
        super().__init__()
        self.branch0 = BasicConv(384, 96, 1)
        self.branch1 = _seq(BasicConv(384, 64, 1), BasicConv(64, 96, 3, 1, 1))
        self.branch2 = _seq(BasicConv(384, 64, 1), BasicConv(64, 96, 3, 1, 1),
                            BasicConv(96, 96, 3, 1, 1))
        self.branch3 = _seq(_avg(), BasicConv(384, 96, 1))

    def forward(self, x):
        return torch.cat((self.branch0(x), self.branch1(x), self.branch2(x), self.branch3(x)), 1)


class ReductionA(nn.Module):
    def __init__(self):
        super().__init__()
        self.branch0 = BasicConv(384, 384, 3, 2)
        self.branch1 = _seq(BasicConv(384, 192, 1), BasicConv(192, 224, 3, 1, 1),
                            BasicConv(224, 256, 3, 2))
        self.branch2 = nn.MaxPool2d(3, stride=2)

    def forward(self, x):
        return torch.cat((self.branch0(x), self.branch1(x), self.branch2(x)), 1)


class InceptionB(nn.Module):
    def __init__(self):
        super().__init__()
        self.branch0 = BasicConv(1024, 384, 1)
        self.branch1 = _seq(BasicConv(1024, 192, 1), BasicConv(192, 224, (1, 7), 1, (0, 3)),
                            BasicConv(224, 256, (7, 1), 1, (3, 0)))
        self.branch2 = _seq(BasicConv(1024, 192, 1), BasicConv(192, 192, (7, 1), 1, (3, 0)),
                            BasicConv(192, 224, (1, 7), 1, (0, 3)),
                            BasicConv(224, 224, (7, 1), 1, (3, 0)),
                            BasicConv(224, 256, (1, 7), 1, (0, 3)))
        self.branch3 = _seq(_avg(), BasicConv(1024, 128, 1))

    def forward(self, x):
        return torch.cat((self.branch0(x), self.branch1(x), self.branch2(x), self.branch3(x)), 1)


class ReductionB(nn.Module):
    def __init__(self):
        super().__init__()
        self.branch0 = _seq(BasicConv(1024, 192, 1), BasicConv(192, 192, 3, 2))
        self.branch1 = _seq(BasicConv(1024, 256, 1), BasicConv(256, 256, (1, 7), 1, (0, 3)),
                            BasicConv(256, 320, (7, 1), 1, (3, 0)), BasicConv(320, 320, 3, 2))
        self.branch2 = nn.MaxPool2d(3, stride=2)

    def forward(self, x):
        return torch.cat((self.branch0(x), self.branch1(x), self.branch2(x)), 1)


class InceptionC(nn.Module):
    def __init__(self):
        super().__init__()
        self.branch0 = BasicConv(1536, 256, 1)
        self.branch1_0 = BasicConv(1536, 384, 1)
        self.branch1_1a = BasicConv(384, 256, (1, 3), 1, (0, 1))
        self.branch1_1b = BasicConv(384, 256, (3, 1), 1, (1, 0))
        self.branch2_0 = BasicConv(1536, 384, 1)
        self.branch2_1 = BasicConv(384, 448, (3, 1), 1, (1, 0))
        self.branch2_2 = BasicConv(448, 512, (1, 3), 1, (0, 1))
        self.branch2_3a = BasicConv(512, 256, (1, 3), 1, (0, 1))
        self.branch2_3b = BasicConv(512, 256, (3, 1), 1, (1, 0))
        self.branch3 = _seq(_avg(), BasicConv(1536, 256, 1))

    def forward(self, x):
        x1 = self.branch1_0(x)
        x2 = self.branch2_2(self.branch2_1(self.branch2_0(x)))
        return torch.cat((self.branch0(x), self.branch1_1a(x1), self.branch1_1b(x1),
                          self.branch2_3a(x2), self.branch2_3b(x2), self.branch3(x)), 1)


class InceptionV4(nn.Module):
    def __init__(self, c, s, k):
        super().__init__()
        f = [BasicConv(c, 32, 3, 2), BasicConv(32, 32, 3), BasicConv(32, 64, 3, 1, 1),
             Mixed3a(), Mixed4a(), Mixed5a()]
        f += [InceptionA() for _ in range(4)] + [ReductionA()]
        f += [InceptionB() for _ in range(7)] + [ReductionB()]
        f += [InceptionC() for _ in range(3)]
        self.features = nn.Sequential(*f)
        self.last_linear = nn.Linear(1536, k)

    def forward(self, x):
        x = F.adaptive_avg_pool2d(self.features(x), 1)
        return self.last_linear(torch.flatten(x, 1))


# ---- torchvision's models ----------------------------------------------------

def vgg(depth):
    def make(c, s, k):
        assert c == 3, "torchvision's VGG takes 3 input channels"
        m = getattr(torchvision.models, "vgg%d" % depth)(weights=None, num_classes=k,
                                                          init_weights=False)
        # Tensile leaves out the adaptive 7x7 average pool (the identity at
        # 224) and sizes classifier.0 for the 512 x (S/32)^2 map it reads
        # (src/models/vgg.c); the same two changes here.
        m.avgpool = nn.Identity()
        m.classifier[0] = nn.Linear(512 * (s // 32) ** 2, 4096)
        return m
    return make


def resnet(depth):
    def make(c, s, k):
        assert c == 3
        return getattr(torchvision.models, "resnet%d" % depth)(weights=None, num_classes=k)
    return make


def inception3(c, s, k):
    assert c == 3
    return torchvision.models.inception_v3(weights=None, aux_logits=False, init_weights=False,
                                           transform_input=False, num_classes=k)


def densenet121(c, s, k):
    assert c == 3
    return torchvision.models.densenet121(weights=None, num_classes=k)


MODELS = {
    "mlp": MLP, "cnn": CNN, "unet": UNet, "inception4": InceptionV4,
    "vgg11": vgg(11), "vgg16": vgg(16), "vgg19": vgg(19),
    "resnet18": resnet(18), "resnet50": resnet(50),
    "inception3": inception3, "densenet121": densenet121,
}


class MaskDropout(nn.Module):
    """Dropout with a given mask (0 or 1/(1-p), as torch's own scaling)."""

    def __init__(self, mask):
        super().__init__()
        self.mask = mask

    def forward(self, x):  # inception3 drops (N,2048,1,1), Tensile (N,2048)
        return x * self.mask.reshape(x.shape)


def set_module(root, name, new):
    parent, _, child = name.rpartition(".")
    setattr(root.get_submodule(parent) if parent else root, child, new)


def rel_err(a, b):
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-300))


class Mismatch(Exception):
    pass


def build(m, load):
    """The torch model of manifest m with Tensile's initial values and
    dropout masks loaded (load(file, shape) reads a dump file)."""
    name = m["model"]
    c, s, k = m["input_shape"][1], m["input_shape"][2], m["n_classes"]
    torch.manual_seed(0)
    model = MODELS[name](c, s, k)
    # Tensile's op attributes are float (tsl_bn_attr): its batch norms run
    # with eps = float(1e-5) = 9.99999974738e-06 (float(1e-3) for the
    # Inceptions) and momentum float(0.1) = 0.100000001490116, even in
    # double. Measured against torch's exact constants: momentum moves every
    # running statistic's update by 1.5e-8, and at batch 2 the 2.5e-8
    # relative difference in eps alone moves resnet18's gradients by 1.6e-6
    # (the step is that ill-conditioned). torch gets Tensile's constants.
    for mod in model.modules():
        if isinstance(mod, nn.modules.batchnorm._BatchNorm):
            mod.eps = float(np.float32(mod.eps))
            mod.momentum = float(np.float32(mod.momentum))

    # names and shapes: Tensile's parameters and buffers are the state_dict
    sd = {kk: v for kk, v in model.state_dict().items() if not kk.endswith("num_batches_tracked")}
    tsl = {t["name"]: t for t in m["params"]}
    missing, extra = sorted(set(sd) - set(tsl)), sorted(set(tsl) - set(sd))
    if missing or extra:
        raise Mismatch("%s: names differ: torch only %s; tensile only %s" %
                       (name, missing[:8], extra[:8]))
    for kk, t in tsl.items():
        if list(sd[kk].shape) != list(t["shape"]):
            raise Mismatch("%s: %s has shape %s in torch, %s in tensile" %
                           (name, kk, list(sd[kk].shape), t["shape"]))
    tparams = {kk for kk, t in tsl.items() if t["kind"] == "parameter"}
    if tparams != set(dict(model.named_parameters())):
        raise Mismatch("%s: parameters (not buffers) differ: %s" %
                       (name, sorted(tparams ^ set(dict(model.named_parameters())))[:8]))
    with torch.no_grad():
        for kk, t in tsl.items():
            f = t["initial_file"] if t["kind"] == "buffer" else t["file"]
            sd[kk].copy_(torch.from_numpy(load(f, t["shape"])))

    # the same dropout masks; every torch dropout layer must get one
    masked = set()
    for dr in m.get("dropout", []):
        mod = model.get_submodule(dr["name"])
        if not isinstance(mod, nn.Dropout) or abs(mod.p - dr["p"]) > 1e-6:
            raise Mismatch("%s: tensile dropout %s (p %g) is %r in torch" %
                           (name, dr["name"], dr["p"], mod))
        mask = load(dr["file"], dr["shape"])
        scale = 1.0 / (1.0 - dr["p"])
        vals = np.unique(mask)
        if not np.all((vals == 0) | (np.abs(vals - scale) <= 1e-12 * scale)):
            raise Mismatch("%s: mask %s holds %s, not 0 or %g" % (name, dr["name"], vals[:4], scale))
        kept, tot = float(np.count_nonzero(mask)), mask.size
        sd_ = math.sqrt(tot * dr["p"] * (1 - dr["p"]))
        if abs((tot - kept) - tot * dr["p"]) > 6 * sd_ + 1:
            raise Mismatch("%s: mask %s drops %d of %d, p %g" % (name, dr["name"], tot - kept, tot,
                                                                dr["p"]))
        set_module(model, dr["name"], MaskDropout(torch.from_numpy(mask)))
        masked.add(dr["name"])
    for mn, mod in model.named_modules():
        if isinstance(mod, nn.Dropout) and mod.p > 0 and mn not in masked:
            raise Mismatch("%s: torch dropout %s has no tensile mask" % (name, mn))
    return model


def step(model, x, y):
    """One training-mode forward and backward: the loss, every parameter's
    gradient and every buffer after the step, as numpy arrays by name."""
    model.train()
    loss = F.cross_entropy(model(x), y)  # mean over the batch (and pixels)
    loss.backward()
    grads = {k: p.grad.numpy() for k, p in model.named_parameters() if p.grad is not None}
    bufs = {k: b.detach().numpy() for k, b in model.named_buffers()}
    return loss.item(), grads, bufs


def check(d, noise=False):
    """Compares the dump in d: (manifest, torch's loss, report sorted worst
    first as (tensor, error), torch's own noise or None). The noise is the
    worst error between torch's step and torch's step on the input scaled by
    1 + 2**-50: how far rounding alone moves this step's results."""
    m = json.load(open(os.path.join(d, "manifest.json")))
    if m.get("dtype") != "f64":
        raise Mismatch("dump %s is %s, not f64" % (d, m.get("dtype")))

    def load(f, shape, dt=np.float64):
        return np.fromfile(os.path.join(d, f), dtype=dt).reshape(shape)

    x = torch.from_numpy(load("input.bin", m["input_shape"]))
    y = torch.from_numpy(load("label.bin", m["label_shape"], np.int32).astype(np.int64))
    loss, grads, bufs = step(build(m, load), x, y)

    def errors(tloss, tgrads, tbufs, rloss, rgrads, rbufs):
        rep = [("loss", abs(tloss - rloss) / abs(rloss))]
        for t in m["params"]:
            kk = t["name"]
            if t["kind"] == "parameter":
                rep.append(("grad " + kk, rel_err(tgrads[kk], rgrads[kk])))
            else:  # the step's update of a running statistic
                before = load(t["initial_file"], t["shape"])
                rep.append(("buffer " + kk, rel_err(tbufs[kk] - before, rbufs[kk] - before)))
        rep.sort(key=lambda r: -r[1] if np.isfinite(r[1]) else -math.inf)
        return rep

    tg, tb = {}, {}
    for t in m["params"]:
        kk = t["name"]
        if t["kind"] == "parameter":
            if "grad_file" not in t or kk not in grads:
                raise Mismatch("%s: %s has no gradient in %s" %
                               (m["model"], kk, "tensile" if "grad_file" not in t else "torch"))
            tg[kk] = load(t["grad_file"], t["shape"])
        else:
            tb[kk] = load(t["file"], t["shape"])
    report = errors(m["loss"], tg, tb, loss, grads, bufs)
    floor = None
    if noise:
        l2, g2, b2 = step(build(m, load), x * (1 + 2.0 ** -50), y)
        floor = errors(l2, g2, b2, loss, grads, bufs)[0]
    return m, loss, report, floor


def dumps(args, tol):
    """(dir, tolerance) of each dump: the arguments, and for "-" the lines
    of stdin, each "DIR [TOL]"."""
    for d in args:
        if d != "-":
            yield d, tol
            continue
        for line in sys.stdin:
            f = line.split()
            if f:
                yield f[0], float(f[1]) if len(f) > 1 else tol


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tol", type=float, default=1e-9)
    ap.add_argument("--delete", action="store_true", help="remove each dump once compared")
    ap.add_argument("--noise", action="store_true",
                    help="also report torch's own rounding noise on each step (twice the time)")
    ap.add_argument("--expect", type=int, default=0, help="fail unless this many dumps compared")
    ap.add_argument("dirs", nargs="+")
    a = ap.parse_args()
    fail, rows = 0, []
    print("torch %s, torchvision %s, float64, %d threads" %
          (torch.__version__, torchvision.__version__, torch.get_num_threads()), flush=True)
    for d, tol in dumps(a.dirs, a.tol):
        t0 = time.time()
        try:
            m, tloss, report, floor = check(d, a.noise)
        except Exception as e:  # a mismatch, a missing file, torch refusing the model
            print("FAIL: %s: %s: %s" % (d, type(e).__name__, e), flush=True)
            rows.append((os.path.basename(d), "(no comparison: see FAIL above)", math.nan, tol,
                         None))
            fail = 1
            continue
        finally:
            if a.delete:
                shutil.rmtree(d, ignore_errors=True)
        worst = report[0]
        bad = not (worst[1] < tol)
        fail |= bad
        ng = sum(1 for r in report if r[0].startswith("grad "))
        nb = sum(1 for r in report if r[0].startswith("buffer "))
        print("%s %s: batch %d, %dx%d; loss tensile %.15f torch %.15f; %d gradients, %d buffers, "
              "%d dropout masks; worst %s %.3e (tol %.0e)%s [%.1f s]" %
              ("FAIL" if bad else "ok  ", m["model"], m["input_shape"][0], m["input_shape"][2],
               m["input_shape"][3], m["loss"], tloss, ng, nb, len(m.get("dropout", [])), worst[0],
               worst[1], tol, "; torch's own noise %.1e (%s)" % (floor[1], floor[0]) if floor else "",
               time.time() - t0), flush=True)
        if bad:
            for r in report[:5]:
                print("    %-60s %.3e" % r)
        rows.append((m["model"], worst[0], worst[1], tol, floor))
    if rows:
        print("\n%-12s %-56s %9s %7s%s" % ("model", "worst tensor", "rel. err", "tol",
                                           "  torch's noise" if a.noise else ""))
        for r in rows:
            print("%-12s %-56s %9.2e %7.0e%s" % (r[0], r[1], r[2], r[3],
                                                "  %9.2e" % r[4][1] if r[4] else ""))
    if len(rows) < max(a.expect, 1):
        print("FAIL: %d dumps read, %d expected" % (len(rows), max(a.expect, 1)))
        fail = 1
    return 1 if fail else 0


if __name__ == "__main__":
    sys.exit(main())
