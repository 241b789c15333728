#!/usr/bin/env bash
# `tensile bench paper --quick` (issue 11): runs into a temporary folder and
# checks what it wrote - every table as CSV and Markdown, the index, the
# memory curves, the figures (PNG and SVG) when python3 has matplotlib, or
# the line saying how to get them - and that the numbers are sane: MSR in
# [0, 1), CBR = MSR / EOR, one job's TENSILE without overhead, the papers'
# columns present with their transcribed values, policies not in this build
# marked and without numbers, registered ones with numbers, layouts'
# competitive ratios in [1, 1.1], TENSILE's memory curve below vanilla's.
# Bad arguments exit 2 with a message naming them.
set -uo pipefail
bin=${1:?usage: test_bench_paper.sh TENSILE}
. "$(dirname "$0")/cli/checks.sh"
command -v python3 >/dev/null || { echo "SKIP: no python3 to read the CSVs"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

expect_exit 0 "bench --help" "$bin" bench --help
check "bench --help names paper: $out" "$(has "tensile bench paper")"
expect_exit 0 "bench paper --help" "$bin" bench paper --help
for w in "--backend B" "--profile P" "--out DIR" "--quick" "--tables LIST" "--no-figures" "--predictor F"; do
  check "bench paper --help lists '$w'" "$(has "$w")"
done
expect_exit 2 "no benchmark" "$bin" bench
expect_exit 2 "an unknown benchmark" "$bin" bench papers
check "the message names it: $out" "$(has "unknown benchmark 'papers'")"
expect_exit 2 "an unknown backend" "$bin" bench paper --backend gpu --out "$tmp/x"
check "the message names the value: $out" "$(has "gpu")"
expect_exit 2 "an unknown table group" "$bin" bench paper --tables tensile,nope --out "$tmp/x"
check "the message names the group: $out" "$(has "'nope' is not a table group")"
expect_exit 2 "an unknown profile" "$bin" bench paper --profile nosuch --out "$tmp/x"
check "the message names --profile: $out" "$(has "--profile")"
expect_exit 2 "an output folder whose parent is missing" "$bin" bench paper --out "$tmp/no/such"
check "the message names the folder: $out" "$(has "cannot make folder")"
expect_exit 2 "a positional argument" "$bin" bench paper quick
expect_exit 2 "an unknown option" "$bin" bench paper --fast

expect_exit 2 "a predictor file that cannot be read" "$bin" bench paper --predictor "$tmp/none.tsp" --out "$tmp/x"
check "the message names --predictor and the file: $out" "$(has "--predictor: cannot read '$tmp/none.tsp'")"

# a tiny predictor for Tables I and II (seconds: test_cold_cli.sh's)
"$bin" profile --small --minutes 0.02 --repeats 1 --max-load 1 --epochs 20 --out "$tmp/pred" --quiet >/dev/null 2>&1
check "a tiny predictor made" "$([ -s "$tmp/pred/predictor.tsp" ] && echo 1 || echo 0)"
out_dir=$tmp/paper
expect_exit 0 "bench paper --quick" "$bin" bench paper --quick --out "$out_dir" --predictor "$tmp/pred/predictor.tsp"
run_out=$out
check "progress on stderr names the tables: $run_out" "$(has "Table III")"
tables="tensile_table1 tensile_table2 tensile_table3 tensile_fig6 tensile_table4 tensile_fig7
        smartpool_table1 autoswap_table2 mosos_fig4 budget_curves"
for t in $tables; do
  check "$t.csv written" "$([ -s "$out_dir/$t.csv" ] && echo 1 || echo 0)"
  check "$t.md written" "$([ -s "$out_dir/$t.md" ] && echo 1 || echo 0)"
done
check "README.md written" "$([ -s "$out_dir/README.md" ] && echo 1 || echo 0)"
check "memory_curves.csv written" "$([ -s "$out_dir/memory_curves.csv" ] && echo 1 || echo 0)"
check "no temporary file left" "$(ls -a "$out_dir" | grep -q 'tmp\|bench-trace' && echo 0 || echo 1)"

if python3 -c "import matplotlib" 2>/dev/null; then
  for f in memory_iteration table3_msr_eor budget_curves tensile_fig6 tensile_fig7 mosos_fig4 \
           smartpool_table1 autoswap_table2; do
    check "figure $f.png" "$([ -s "$out_dir/figures/$f.png" ] && echo 1 || echo 0)"
    check "figure $f.svg" "$([ -s "$out_dir/figures/$f.svg" ] && echo 1 || echo 0)"
  done
else
  out=$run_out
  check "without matplotlib it says how to get the figures: $out" "$(has "pip install matplotlib")"
fi

# The numbers: one Python program, one line per broken expectation.
bad=$(python3 - "$out_dir" <<'PY'
import csv, os, sys
d = sys.argv[1]
def rows(n):
    with open(os.path.join(d, n + ".csv"), newline="") as f:
        return list(csv.DictReader(f))
def num(s):
    try: return float(s)
    except ValueError: return None
fails = []
def need(cond, what):
    if not cond: fails.append(what)
need(open(os.path.join(d, "README.md")).read().count("## ") >= 10, "README.md has every table")
for name in ("tensile_table3", "tensile_fig6", "tensile_table4"):
    rs = rows(name)
    need(len(rs) > 0, name + ": rows")
    for c in ("MSR", "EOR", "CBR", "paper MSR", "paper EOR", "paper CBR", "status", "TENSILE beats it"):
        need(c in rs[0], "%s: column %s" % (name, c))
    for r in rs:
        m, e, b = num(r["MSR"]), num(r["EOR"]), num(r["CBR"])
        tag = "%s %s %s" % (name, r.get("model", r.get("jobs")), r["policy"])
        if r["status"] == "not available in this build":
            need(m is None and e is None and b is None, tag + ": numbers for a policy not in the build")
            continue
        need(r["policy"] not in ("tensile", "vdnn-conv") or r["status"] in ("ok", "budget not met"),
             tag + ": a registered policy without numbers: " + r["status"])
        if m is None: continue
        need(0 <= m < 1, tag + ": MSR %s outside [0, 1)" % m)
        need(e > 0, tag + ": EOR %s" % e)
        need(abs(b - m / e) < 1e-3, tag + ": CBR %s is not MSR / EOR" % b)
        if name == "tensile_table3":
            need(e >= 0.999, tag + ": one job faster than vanilla (EOR %s)" % e)
        if r["policy"] == "tensile":
            need(m > 0, tag + ": TENSILE saves nothing")
            if name == "tensile_table3":
                need(e <= 1.0005, tag + ": TENSILE alone with overhead (EOR %s)" % e)
t3 = rows("tensile_table3")
v = [r for r in t3 if r["model"] == "vgg16" and r["policy"] == "tensile"]
need(len(v) == 1 and v[0]["paper MSR"] == "0.2670" and v[0]["paper EOR"] == "1.6287",
     "Table III: the paper's vgg16 TENSILE row (0.2670, 1.6287)")
v = [r for r in t3 if r["model"] == "resnet50" and r["policy"] == "capuchin"]
need(len(v) == 1 and v[0]["paper CBR"] == "0.1729", "Table III: the paper's resnet50 Capuchin CBR")
t4 = rows("tensile_table4")
need(any(r["policy"] == "tensile" and r["paper MSR"] == "0.1565" for r in t4), "Table IV: paper's TENSILE MSR")
t1 = rows("tensile_table1")
cs = [r for r in t1 if r["phase"] == "TENSILE_cs"]
up = [r for r in t1 if r["phase"] == "TENSILE_up"]
need(len(cs) == 1 and len(up) == 1, "Table I: a cold-start and an updated row: %s" % t1)
for r in cs + up:
    m, e, b = num(r["MSR"]), num(r["EOR"]), num(r["CBR"])
    need(m is not None and e is not None and b is not None, "Table I %s: numbers: %s" % (r["phase"], r))
    if m is None or e is None or b is None: continue
    need(0 <= m < 1 and e >= 0.999 and abs(b - m / e) < 1e-3, "Table I %s: MSR %s EOR %s CBR %s" % (r["phase"], m, e, b))
    need(r["status"] == "ok", "Table I %s: status %s" % (r["phase"], r["status"]))
if up and num(up[0]["EOR"]) is not None:
    # the updated plan is made from the latencies it runs under: no copy is late
    need(num(up[0]["EOR"]) <= 1.0005, "Table I: TENSILE_up with overhead (EOR %s)" % up[0]["EOR"])
t2 = rows("tensile_table2")
tt = [r for r in t2 if r["method"] == "TENSILE"]
need(len(tt) == 1 and cs and tt[0]["first-iteration EOR"] == cs[0]["EOR"],
     "Table II: TENSILE's first iteration is the cold-start plan's: %s" % t2)
need(len(tt) == 1 and (num(tt[0]["prediction ms"]) or -1) >= 0, "Table II: the prediction's time")
cap = [r for r in t2 if r["method"].startswith("Capuchin")]
need(len(cap) == 1 and "real runs only" in cap[0]["status"], "Table II: Capuchin's passive mode is real-only: %s" % cap)
for r in rows("smartpool_table1"):
    need(num(r["paper SmartPool ratio"]) is not None and num(r["paper CnMem ratio"]) is not None,
         "SmartPool: paper ratios of " + r["model"])
    for c in ("layout ratio (vanilla)", "layout ratio (TENSILE plan)", "online best fit ratio"):
        x = num(r[c])
        need(x is not None and 1 <= x < 1.1, "SmartPool %s: %s = %s" % (r["model"], c, r[c]))
for r in rows("autoswap_table2"):
    need(num(r["paper reduction %"]) is not None, "AutoSwap: paper reduction of " + r["model"])
    need((num(r["original load MiB"]) or 0) > 0, "AutoSwap: original load of " + r["model"])
bc = rows("budget_curves")
need(any(r["policy"] == "tensile" and num(r["0.90"]) is not None for r in bc), "budget curves: TENSILE at 0.90")
for r in rows("mosos_fig4"):
    if r["status"] == "not available in this build":
        need(all(r[c] == "n/a" for c in r if num(c) is not None), "MO-SOS: numbers for " + r["policy"])
curves = rows("memory_curves")
for m in ("vgg16", "resnet50"):
    peak = {p: max([float(r["load_mib"]) for r in curves if r["model"] == m and r["policy"] == p] or [0])
            for p in ("vanilla", "tensile")}
    need(0 < peak["tensile"] < peak["vanilla"], "memory curve of %s: %s" % (m, peak))
print("\n".join(fails))
PY
)
check "numbers sane: $bad" "$([ -z "$bad" ] && echo 1 || echo 0)"

# without a predictor Tables I and II say how to make one (the default file is not there)
expect_exit 0 "--tables cold without a predictor" env TSL_PROFILE_DIR="$tmp/noprofiles" "$bin" bench paper --quick --tables cold --no-figures --out "$tmp/cold"
check "Table I says how to make a predictor: $(cat "$tmp/cold/tensile_table1.csv" 2>/dev/null)" "$(grep -q "tensile profile" "$tmp/cold/tensile_table1.csv" 2>/dev/null && echo 1 || echo 0)"

# the budget curves alone: their cells run in child processes (and the
# integer programs' solves in grandchildren), which must not write the
# parent's buffered output again (memory_curves.csv holds only its header)
expect_exit 0 "--tables curves" "$bin" bench paper --quick --tables curves --no-figures --out "$tmp/curves"
check "memory_curves.csv has one header line: $(head -c 300 "$tmp/curves/memory_curves.csv")" "$([ "$(grep -c '^model,policy' "$tmp/curves/memory_curves.csv")" = 1 ] && echo 1 || echo 0)"

# one group alone: the others' files are not written
expect_exit 0 "--tables smartpool" "$bin" bench paper --quick --tables smartpool --no-figures --out "$tmp/sp"
check "smartpool_table1.csv written alone" "$([ -s "$tmp/sp/smartpool_table1.csv" ] && [ ! -e "$tmp/sp/tensile_table3.csv" ] && [ ! -e "$tmp/sp/figures" ] && echo 1 || echo 0)"
checks_done
