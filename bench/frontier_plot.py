#!/usr/bin/env python3
"""frontier_plot.py - the plot of `tensile frontier`, from its CSV.

    python3 bench/frontier_plot.py OUT_DIR

Reads OUT_DIR/frontier.csv and writes OUT_DIR/frontier.png and
frontier.svg: the simulated overhead (EOR) against the budget (a fraction
of vanilla's footprint), one curve per policy, through the budgets it met
(filled markers); a budget it planned but did not meet is a hollow marker
at its EOR; the op floor is a dashed line, and the proven optima (an
integer program's, where there are any) a black dotted curve. Messages go
to stderr (stdout may be `tensile frontier --json`'s). Needs matplotlib
(pip install matplotlib). Exit 0, 1 when the plot could not be made, 2 on
bad arguments.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from paper_figures import num, plt, read, save, uniq  # noqa: E402 (matplotlib checked there)


def plot(out):
    rows = read(out, "frontier")
    if not rows:
        sys.stderr.write("frontier_plot.py: %s/frontier.csv: no rows\n" % out)
        return 1
    r0 = rows[0]
    fig, ax = plt.subplots(figsize=(10, 5))
    for k, p in enumerate(uniq(r["policy"] for r in rows)):
        mine = [r for r in rows if r["policy"] == p and num(r["eor"]) is not None]
        met = [(num(r["fraction"]), num(r["eor"])) for r in mine if r["budget_met"] == "1"]
        unmet = [(num(r["fraction"]), num(r["eor"])) for r in mine if r["budget_met"] != "1"]
        color = "C%d" % (k % 10)
        if met:
            met.sort()
            ax.plot([x for x, _ in met], [y for _, y in met], marker="o", color=color, label=p)
        if unmet:
            ax.scatter([x for x, _ in unmet], [y for _, y in unmet], facecolors="none",
                       edgecolors=color, label=None if met else p + " (unmet)")
    opt = sorted({(num(r["fraction"]), num(r["optimum_eor"])) for r in rows
                  if num(r["optimum_eor"]) is not None})
    if opt:
        ax.plot([x for x, _ in opt], [y for _, y in opt], "k:", marker="x",
                label="proven optimum (%s)" % "/".join(uniq(r["optimum_policy"] for r in rows
                                                            if r["optimum_policy"])))
    floor, van = num(r0["op_floor_bytes"]), num(r0["vanilla_footprint_bytes"])
    if floor and van:
        ax.axvline(floor / van, color="grey", ls="--", lw=1, label="op floor")
    ax.set_xlabel("budget / vanilla footprint")
    ax.set_ylabel("EOR (simulated iteration time / vanilla's)")
    ax.invert_xaxis()
    ax.set_title("%s, batch %s, image %s, on %s: overhead against the budget\n(hollow: budget "
                 "not met)" % (r0["model"], r0["batch"], r0["image"], r0["profile"]), fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    written = []
    save(fig, out, "frontier", written, layout=False)
    sys.stderr.write("frontier_plot.py: wrote %s/frontier.png and frontier.svg\n" % out)
    return 0


def main():
    if len(sys.argv) != 2 or sys.argv[1].startswith("-"):
        sys.stderr.write("usage: frontier_plot.py OUT_DIR (the folder tensile frontier wrote)\n")
        return 2
    out = sys.argv[1]
    if not os.path.isdir(out):
        sys.stderr.write("frontier_plot.py: %s: no such folder\n" % out)
        return 2
    try:
        return plot(out)
    except Exception as e:  # a malformed CSV: say what, exit 1
        sys.stderr.write("frontier_plot.py: %s\n" % e)
        return 1


if __name__ == "__main__":
    sys.exit(main())
