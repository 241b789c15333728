#!/usr/bin/env bash
# `tensile frontier` (issue 12): a small model's frontier into a temporary
# folder - the CSV's header exactly, a row per policy and budget, budgets
# met only by plans within them, the budgets below the op floor marked and
# not planned, --json's rows the CSV's, the Markdown table, the plot when
# python3 has matplotlib (or the line saying how to get it), stdout's
# Markdown without --out; bad arguments exit 2 naming the option and value,
# an output folder that cannot be made exits 1.
set -uo pipefail
bin=${1:?usage: test_frontier.sh TENSILE}
. "$(dirname "$0")/cli/checks.sh"
command -v python3 >/dev/null || { echo "SKIP: no python3 to read the CSV"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
small=(--model vgg11 --batch 8 --image-size 32 --profile a6000)

expect_exit 0 "--help" "$bin" --help
check "tensile --help lists frontier: $out" "$(has "  frontier")"
expect_exit 0 "frontier --help" "$bin" frontier --help
for w in "--model M" "--batch B" "--profile P" "--image-size S" "--fractions LIST" "--policies LIST" \
         "--out DIR" "--json" "--no-figures" "planned_footprint_bytes,eor"; do
  check "frontier --help lists '$w'" "$(has "$w")"
done

# bad arguments: exit 2, the option and the value named
expect_exit 2 "no --model" "$bin" frontier --batch 8
check "names --model: $out" "$(has "--model: missing")"
expect_exit 2 "an unknown model" "$bin" frontier --model nosuch
check "names the model: $out" "$(has "--model: unknown model 'nosuch'")"
expect_exit 2 "an unknown profile" "$bin" frontier "${small[@]:0:4}" --profile nosuch
check "names --profile and the value: $out" "$(has "--profile: .*nosuch")"
expect_exit 2 "an unknown policy" "$bin" frontier "${small[@]}" --policies tensile,nosuch
check "names --policies and the value: $out" "$(has "--policies: .*nosuch")"
expect_exit 2 "a fraction of 0" "$bin" frontier "${small[@]}" --fractions 1.0,0
check "names --fractions and the value: $out" "$(has "--fractions: 0 is outside (0, 1.5")"
expect_exit 2 "a fraction above 1.5" "$bin" frontier "${small[@]}" --fractions 1.6
check "names the value: $out" "$(has "--fractions: 1.6 is outside")"
expect_exit 2 "a fraction that is no number" "$bin" frontier "${small[@]}" --fractions 0.5,abc
check "names the value: $out" "$(has "--fractions: 'abc' is not a number")"
expect_exit 2 "an empty fraction" "$bin" frontier "${small[@]}" --fractions 0.5,,0.4
check "says so: $out" "$(has "--fractions: .*empty entry")"
expect_exit 2 "a batch of 0" "$bin" frontier "${small[@]:0:2}" --batch 0
check "names --batch: $out" "$(has "--batch")"
expect_exit 2 "an image too small for the model" "$bin" frontier --model vgg11 --image 4
check "names --image-size and the value: $out" "$(has "image-size 4: the job cannot be built")"
expect_exit 2 "a missing value" "$bin" frontier --model
check "names --model: $out" "$(has "--model")"
expect_exit 2 "an unknown option" "$bin" frontier "${small[@]}" --fast
check "names it: $out" "$(has "'--fast'")"
expect_exit 1 "an output folder that cannot be made" "$bin" frontier "${small[@]}" \
  --policies tensile --fractions 1 --out "$tmp/no/such"
check "names the folder: $out" "$(has "cannot make folder")"

# one run, files and JSON together: fractions 1.0, 0.6, 0.3 and one far
# below the op floor
d=$tmp/f
"$bin" frontier "${small[@]}" --fractions 1.0,0.6,0.3,0.001 --policies tensile,capuchin \
  --out "$d" --json >"$tmp/out.json" 2>"$tmp/err"
rc=$?
check "the run exits 0 (exit $rc): $(tail -5 "$tmp/err")" "$([ $rc = 0 ] && echo 1 || echo 0)"
out=$(cat "$tmp/err")
check "progress per cell on stderr: $out" "$(has "vgg11 b8: capuchin at 0.60 \.\.\.")"
check "frontier.csv written" "$([ -s "$d/frontier.csv" ] && echo 1 || echo 0)"
check "frontier.md written" "$([ -s "$d/frontier.md" ] && echo 1 || echo 0)"
check "no temporary file left" "$(ls -a "$d" | grep -q 'tmp' && echo 0 || echo 1)"
if python3 -c "import matplotlib" 2>/dev/null; then
  check "frontier.png" "$([ -s "$d/frontier.png" ] && echo 1 || echo 0)"
  check "frontier.svg" "$([ -s "$d/frontier.svg" ] && echo 1 || echo 0)"
else
  check "without matplotlib it says how to get the plot: $out" "$(has "pip install matplotlib")"
fi
header=$(head -1 "$d/frontier.csv")
want="model,batch,profile,policy,fraction,budget_bytes,planned_footprint_bytes,eor,swaps,recomputes,planning_ms,budget_met,"
check "the CSV's header starts exactly with the required columns: $header" \
  "$([ "${header:0:${#want}}" = "$want" ] && echo 1 || echo 0)"

bad=$(python3 - "$d/frontier.csv" "$tmp/out.json" "$d/frontier.md" <<'PY'
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1], newline="")))
doc = json.load(open(sys.argv[2]))
md = open(sys.argv[3]).read()
fails = []
def need(cond, what):
    if not cond: fails.append(what)
need(len(rows) == 8, "8 rows (2 policies x 4 budgets), got %d" % len(rows))
need([r["policy"] for r in rows] == ["tensile"] * 4 + ["capuchin"] * 4, "rows policy by policy")
need([r["fraction"] for r in rows[:4]] == ["1", "0.6", "0.3", "0.001"], "fractions in order")
floor, van = int(doc["op_floor_bytes"]), int(doc["vanilla_footprint_bytes"])
need(0 < floor < van, "op floor %d, vanilla %d" % (floor, van))
need("op floor" in md and ("%.3f of vanilla" % (floor / van)) in md, "the floor in the Markdown header")
for r in rows:
    tag = "%s at %s" % (r["policy"], r["fraction"])
    b = int(r["budget_bytes"])
    need(b == int(float(r["fraction"]) * van), tag + ": budget %d" % b)
    need(r["budget_met"] in ("0", "1"), tag + ": budget_met " + r["budget_met"])
    if b < floor:
        need(r["budget_met"] == "0" and r["status"] == "below the op floor (%d bytes)" % floor
             and r["eor"] == "" and r["planned_footprint_bytes"] == "",
             tag + ": below the floor, not marked: " + r["status"])
        continue
    need(r["eor"] != "" and float(r["eor"]) >= 0.999, tag + ": eor " + r["eor"])
    need(float(r["planning_ms"]) >= 0, tag + ": planning_ms")
    if r["budget_met"] == "1":
        need(int(r["planned_footprint_bytes"]) <= b, tag + ": met with %s > %d" % (r["planned_footprint_bytes"], b))
        need(r["status"] == "ok", tag + ": status " + r["status"])
    else:
        need(int(r["planned_footprint_bytes"]) > b and r["status"] == "budget not met",
             tag + ": unmet: " + r["status"])
need(any(r["fraction"] == "0.001" for r in rows) and all(r["budget_met"] == "0" for r in rows if r["fraction"] == "0.001"),
     "0.001 is below the floor")
need(all(r["budget_met"] == "1" for r in rows if r["fraction"] == "1"), "every policy meets vanilla's footprint")
# --json: the same rows, numbers as numbers
js = doc["rows"]
need(doc["model"] == "vgg11" and doc["batch"] == 8 and len(js) == len(rows), "json: model, batch, rows")
for r, j in zip(rows, js):
    for k, v in r.items():
        w = j.get(k, "missing")
        if w is None: w = ""
        elif isinstance(w, float):  # the CSV has 10 significant digits
            if v != "" and abs(w - float(v)) <= 1e-9 * max(1.0, abs(w)): v = w
        elif isinstance(w, int): w = str(w)
        need(w == v, "json %s at %s: %s = %r, csv %r" % (r["policy"], r["fraction"], k, w, v))
need("| tensile |" in md and "| capuchin |" in md and "below floor" in md, "Markdown rows per policy")
print("\n".join(fails))
PY
)
check "rows sane: $bad" "$([ -z "$bad" ] && echo 1 || echo 0)"

# without --out: the Markdown table on stdout, nothing written
out=$(cd "$tmp" && "$bin" frontier "${small[@]}" --fractions 1.0,0.001 --policies tensile 2>/dev/null)
check "the Markdown table on stdout: $out" "$(has "| tensile | [0-9.]* | below floor |")"
check "its header names the op floor: $out" "$(has "op floor")"
check "nothing written without --out" "$([ ! -e "$tmp/frontier.csv" ] && echo 1 || echo 0)"
checks_done
