#!/usr/bin/env python3
"""paper_figures.py - the figures of `tensile bench paper`, from its CSVs.

    python3 bench/paper_figures.py OUT_DIR

Reads the tables `tensile bench paper` wrote into OUT_DIR and writes
OUT_DIR/figures/NAME.png and NAME.svg:
  memory_iteration   memory over one iteration per policy (Table III's models)
  table3_msr_eor     MSR and EOR bars per model and method, the paper's beside
  budget_curves      overhead (EOR) against the budget, every policy per model
  fig6               TENSILE's Fig. 6: MSR, EOR, CBR against the workloads
  fig7               TENSILE's Fig. 7: MSR, EOR, CBR against the batch
  mosos_fig4         MO-SOS's Fig. 4: step time against the memory ratio
  smartpool_table1   competitive ratios, Tensile's and the paper's
  autoswap_table2    load reduction without overhead, Tensile's and the paper's
A table that is missing (not asked for with --tables) is skipped; a cell
that is not a number ("not available in this build", "unmet") is left out
of its figure. Needs matplotlib (pip install matplotlib). Exit 0, 1 when a
figure could not be written, 2 on bad arguments.
"""
import csv
import os
import sys

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
except ImportError:
    sys.stderr.write("paper_figures.py: needs matplotlib: pip install matplotlib "
                     "(or scripts/pydeps.sh matplotlib)\n")
    sys.exit(1)


def read(out, name):
    """The rows of OUT/NAME.csv as dicts, or None if absent."""
    path = os.path.join(out, name + ".csv")
    if not os.path.exists(path):
        return None
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def num(s):
    """s as a float, or None when it is not a number."""
    try:
        return float(s)
    except (TypeError, ValueError):
        return None


def grid(n):
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 3.6 * rows), squeeze=False)
    for k in range(n, rows * cols):
        axes[k // cols][k % cols].axis("off")
    return fig, [axes[k // cols][k % cols] for k in range(n)]


def save(fig, figdir, name, written, layout=True):
    if layout:  # room at the top for the suptitle
        fig.tight_layout(rect=(0, 0, 1, 0.97))
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(figdir, name + "." + ext), dpi=110)
    plt.close(fig)
    written.append(name)


def uniq(seq):
    seen = []
    for x in seq:
        if x not in seen:
            seen.append(x)
    return seen


def memory_iteration(out, figdir, written):
    rows = read(out, "memory_curves")
    if not rows:
        return
    models = uniq(r["model"] for r in rows)
    fig, axes = grid(len(models))
    for ax, m in zip(axes, models):
        for p in uniq(r["policy"] for r in rows if r["model"] == m):
            pts = [(float(r["t_ms"]), float(r["load_mib"])) for r in rows
                   if r["model"] == m and r["policy"] == p]
            ax.step([t for t, _ in pts], [b for _, b in pts], where="post", label=p, lw=1)
        ax.set_title(m)
        ax.set_xlabel("time in the iteration (ms, simulated)")
        ax.set_ylabel("load (MiB)")
        ax.legend(fontsize=7)
    fig.suptitle("Memory over one iteration per policy (Table III's jobs)")
    save(fig, figdir, "memory_iteration", written)


def table3_msr_eor(out, figdir, written):
    rows = read(out, "tensile_table3")
    if not rows:
        return
    models = uniq(r["model"] for r in rows)
    methods = uniq(r["method"] for r in rows)
    fig, axes = plt.subplots(1, 2, figsize=(13, 4))
    w = 0.8 / (2 * len(methods))
    for ax, metric in zip(axes, ("MSR", "EOR")):
        for k, meth in enumerate(methods):
            xs, ys, px, py = [], [], [], []
            for i, m in enumerate(models):
                r = next((r for r in rows if r["model"] == m and r["method"] == meth), None)
                x = i - 0.4 + (2 * k + 0.5) * w
                if r and num(r[metric]) is not None:
                    xs.append(x)
                    ys.append(num(r[metric]))
                if r and num(r["paper " + metric]) is not None:
                    px.append(x + w)
                    py.append(num(r["paper " + metric]))
            color = "C%d" % (k % 10)
            if xs:
                ax.bar(xs, ys, w, color=color, label=meth + " (Tensile)")
            if px:
                ax.bar(px, py, w, color=color, alpha=0.35, hatch="//", label=meth + " (paper)")
        ax.set_xticks(range(len(models)))
        ax.set_xticklabels(models, rotation=20)
        ax.set_ylabel(metric)
        ax.set_title(metric + " per model: Tensile (solid) and the paper (hatched)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=7)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    save(fig, figdir, "table3_msr_eor", written, layout=False)


def sweep(out, figdir, written, name, ylabel, title):
    rows = read(out, name)
    if not rows:
        return
    ratios = [c for c in rows[0].keys() if num(c) is not None]
    models = uniq(r["model"] for r in rows)
    fig, axes = grid(len(models))
    for ax, m in zip(axes, models):
        for r in rows:
            if r["model"] != m:
                continue
            pts = [(num(c), num(r[c])) for c in ratios if num(r[c]) is not None]
            if pts:
                ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=r["method"])
        ax.set_title(m)
        ax.set_xlabel("budget / vanilla footprint")
        ax.set_ylabel(ylabel)
        ax.invert_xaxis()
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.suptitle(title)
    save(fig, figdir, name, written)


def metric_lines(out, figdir, written, name, xcol, title, group="method"):
    rows = read(out, name)
    if not rows:
        return
    models = uniq(r["model"] for r in rows)
    fig, axes = plt.subplots(len(models), 3, figsize=(13, 3.2 * len(models)), squeeze=False)
    for i, m in enumerate(models):
        for j, metric in enumerate(("MSR", "EOR", "CBR")):
            ax = axes[i][j]
            for g in uniq(r.get(group, "TENSILE") for r in rows):
                pts = [(num(r[xcol]), num(r[metric])) for r in rows
                       if r["model"] == m and r.get(group, "TENSILE") == g
                       and num(r[metric]) is not None]
                if pts:
                    ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=g)
            ax.set_title("%s: %s" % (m, metric))
            ax.set_xlabel(xcol)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=7)
    fig.suptitle(title)
    save(fig, figdir, name, written)


def bars(rows, cols, ax):
    """Grouped bars, one group per row (model), one bar per (column, label);
    paper columns hatched."""
    w = 0.8 / len(cols)
    for k, (c, label) in enumerate(cols):
        xs = [i - 0.4 + (k + 0.5) * w for i, r in enumerate(rows) if num(r[c]) is not None]
        ys = [num(r[c]) for r in rows if num(r[c]) is not None]
        ax.bar(xs, ys, w, label=label, hatch="//" if c.startswith("paper") else None)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels([r["model"] for r in rows])
    ax.legend(fontsize=7)


def smartpool(out, figdir, written):
    rows = read(out, "smartpool_table1")
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(11, 4))
    bars(rows, [("layout ratio (vanilla)", "Tensile layout (vanilla)"),
                ("layout ratio (TENSILE plan)", "Tensile layout (TENSILE plan)"),
                ("online best fit ratio", "Tensile online best fit"),
                ("paper SmartPool ratio", "paper SmartPool"), ("paper CnMem ratio", "paper CnMem")], ax)
    ax.set_ylim(0.95, None)
    ax.set_ylabel("footprint / peak load")
    ax.set_title("SmartPool's Table I: competitive ratio (batch 100)")
    save(fig, figdir, "smartpool_table1", written)


def autoswap(out, figdir, written):
    rows = read(out, "autoswap_table2")
    if not rows:
        return
    fig, ax = plt.subplots(figsize=(11, 4))
    bars(rows, [("AutoSwap reduction %", "Tensile's AutoSwap"),
                ("TENSILE reduction %", "Tensile's TENSILE"),
                ("paper reduction %", "paper AutoSwap")], ax)
    ax.set_ylabel("load reduction without overhead (%)")
    ax.set_title("AutoSwap's Table II (batch 100)")
    save(fig, figdir, "autoswap_table2", written)


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.stderr.write("usage: paper_figures.py OUT_DIR (the folder tensile bench paper wrote)\n")
        return 2
    out = sys.argv[1]
    if not os.path.isdir(out):
        sys.stderr.write("paper_figures.py: %s: no such folder\n" % out)
        return 2
    figdir = os.path.join(out, "figures")
    os.makedirs(figdir, exist_ok=True)
    written = []
    steps = [
        lambda: memory_iteration(out, figdir, written),
        lambda: table3_msr_eor(out, figdir, written),
        lambda: sweep(out, figdir, written, "budget_curves", "EOR (simulated)",
                      "Overhead against budget, every policy per model"),
        lambda: metric_lines(out, figdir, written, "tensile_fig6", "workloads",
                             "TENSILE's Fig. 6: 1 to 4 workloads"),
        lambda: metric_lines(out, figdir, written, "tensile_fig7", "batch",
                             "TENSILE's Fig. 7: batch size", group="_none"),
        lambda: sweep(out, figdir, written, "mosos_fig4", "time of a step (ms, simulated)",
                      "MO-SOS's Fig. 4: step time against the memory ratio"),
        lambda: smartpool(out, figdir, written),
        lambda: autoswap(out, figdir, written),
    ]
    rc = 0
    for s in steps:
        try:
            s()
        except Exception as e:  # one figure's failure leaves the others
            sys.stderr.write("paper_figures.py: %s\n" % e)
            rc = 1
    print("figures (PNG and SVG) in %s: %s" % (figdir, ", ".join(written) or "none"))
    return rc


if __name__ == "__main__":
    sys.exit(main())
