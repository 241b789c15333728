#!/usr/bin/env python3
"""Recompute one Tensile training step with JAX (float64) and compare.

Reads the directory written by tsl_dump_step: the parameters (as Tensile
initialised them), the batch, Tensile's loss and every parameter gradient,
and the batch-norm running statistics after the step. Rebuilds the model
from its own definition here (not from Tensile's graph), computes the loss
and gradients with jax.grad in float64, and exits non-zero if any relative
error max|tensile - jax| / max|jax| reaches the tolerance (default 1e-4),
printing the largest one.
"""
import json
import os
import sys

import numpy as np

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

jax.config.update("jax_enable_x64", True)


def conv(x, w, stride=1, pad=0, b=None):
    y = lax.conv_general_dilated(x, w, (stride, stride), [(pad, pad), (pad, pad)],
                                 dimension_numbers=("NCHW", "OIHW", "NCHW"),
                                 precision=lax.Precision.HIGHEST)
    if b is not None:
        y = y + b[None, :, None, None]
    return y


def maxpool(x, k, s, p=0):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 1, k, k), (1, 1, s, s),
                             [(0, 0), (0, 0), (p, p), (p, p)])


def linear(x, w, b):
    return jnp.dot(x, w.T, precision=lax.Precision.HIGHEST) + b


def xent(logits, labels):
    lse = jax.scipy.special.logsumexp(logits, axis=1)
    picked = jnp.take_along_axis(logits, labels[:, None], axis=1)[:, 0]
    return jnp.mean(lse - picked)


def batchnorm(x, p, name, stats, eps=1e-5, momentum=0.1):
    mean = jnp.mean(x, axis=(0, 2, 3))
    var = jnp.mean((x - mean[None, :, None, None]) ** 2, axis=(0, 2, 3))
    n = x.shape[0] * x.shape[2] * x.shape[3]
    stats[name + ".running_mean"] = momentum * mean
    stats[name + ".running_var"] = (1 - momentum) * 1.0 + momentum * var * n / (n - 1)
    xh = (x - mean[None, :, None, None]) / jnp.sqrt(var[None, :, None, None] + eps)
    return xh * p[name + ".weight"][None, :, None, None] + p[name + ".bias"][None, :, None, None]


def cnn(p, names, x, stats):
    """conv5x5(32) relu pool2, conv5x5(64) relu pool2, fc 512, relu, fc."""
    k = [p[n] for n in names]  # parameters in creation order
    h = maxpool(jax.nn.relu(conv(x, k[0], 1, 2, k[1])), 2, 2)
    h = maxpool(jax.nn.relu(conv(h, k[2], 1, 2, k[3])), 2, 2)
    h = h.reshape(h.shape[0], -1)
    h = jax.nn.relu(linear(h, k[4], k[5]))
    return linear(h, k[6], k[7])


def resnet18(p, names, x, stats):
    h = conv(x, p["conv1.weight"], 2, 3)
    h = jax.nn.relu(batchnorm(h, p, "bn1", stats))
    h = maxpool(h, 3, 2, 1)
    for layer, stride in zip(range(1, 5), (1, 2, 2, 2)):
        for blk in range(2):
            pre = "layer%d.%d." % (layer, blk)
            s = stride if blk == 0 else 1
            out = conv(h, p[pre + "conv1.weight"], s, 1)
            out = jax.nn.relu(batchnorm(out, p, pre + "bn1", stats))
            out = conv(out, p[pre + "conv2.weight"], 1, 1)
            out = batchnorm(out, p, pre + "bn2", stats)
            if pre + "downsample.0.weight" in p:
                h = batchnorm(conv(h, p[pre + "downsample.0.weight"], s, 0), p,
                              pre + "downsample.1", stats)
            h = jax.nn.relu(out + h)
    h = jnp.mean(h, axis=(2, 3))
    return linear(h, p["fc.weight"], p["fc.bias"])


MODELS = {"cnn": cnn, "resnet18": resnet18}


def rel_err(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30))


def main():
    d = sys.argv[1]
    tol = float(sys.argv[2]) if len(sys.argv) > 2 else 1e-4
    m = json.load(open(os.path.join(d, "manifest.json")))
    fwd = MODELS[m["model"]]
    load = lambda f, shape, dt: np.fromfile(os.path.join(d, f), dtype=dt).reshape(shape)
    fdt = np.float64 if m.get("dtype") == "f64" else np.float32  # tsl_dump_step's element type
    x = load("input.bin", m["input_shape"], fdt).astype(np.float64)
    y = load("label.bin", m["label_shape"], np.int32)
    params, grads, buffers, names = {}, {}, {}, []
    for t in m["params"]:
        v = load(t["file"], t["shape"], fdt).astype(np.float64)
        if t["kind"] == "parameter":
            params[t["name"]] = jnp.asarray(v)
            names.append(t["name"])
            grads[t["name"]] = load(t["grad_file"], t["shape"], fdt).astype(np.float64)
        else:
            buffers[t["name"]] = v

    def loss_fn(p):
        stats = {}
        return xent(fwd(p, names, x, stats), y), stats

    (loss, stats), g = jax.value_and_grad(loss_fn, has_aux=True)(params)
    worst = ("loss", abs(m["loss"] - float(loss)) / abs(float(loss)))
    report = [worst]
    for n in names:
        report.append(("grad " + n, rel_err(grads[n], np.asarray(g[n]))))
    for n, v in stats.items():
        report.append(("buffer " + n, rel_err(buffers[n], np.asarray(v))))
    report.sort(key=lambda r: -r[1])
    print("%s: loss tensile %.8f jax %.8f; %d gradients, %d buffers compared" %
          (m["model"], m["loss"], float(loss), len(names), len(stats)))
    for name, e in report[:5]:
        print("  largest relative errors: %-40s %.3e" % (name, e))
    if len(names) == 0 or report[0][1] >= tol or not np.isfinite(report[0][1]):
        print("FAIL: %s relative error %.3e >= %.1e" % (report[0][0], report[0][1], tol))
        return 1
    print("OK: every relative error < %.1e" % tol)
    return 0


if __name__ == "__main__":
    sys.exit(main())
