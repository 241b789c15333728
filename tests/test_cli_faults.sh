#!/usr/bin/env bash
# Bad input and faults at the command line (issue 15; the cases of
# ../shared/cases/reliability): each ends with a message naming the input,
# the field and the value and a documented non-zero status, or a correct
# result; never a crash, a hang or a silent wrong answer. Every command
# runs under `timeout`, so a hang fails its check instead of the suite.
set -uo pipefail
bin=${1:?usage: test_cli_faults.sh TENSILE}
. "$(dirname "$0")/cli/checks.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
src=${TSL_SOURCE_DIR:-$(cd "$(dirname "$0")/.." && pwd)}
t() { timeout 60 "$bin" "$@"; }
# 1 if $out holds every one of the texts, else 0
all_of() { local n; for n in "$@"; do [ "$(has "$n")" = 1 ] || { echo 0; return; }; done; echo 1; }
quick=(--dataset synthetic --threads 1 --quiet)

# -- sizes: overflows are refused, huge models are reported, never wrapped
expect_exit 2 "the element count overflows int64 (once 4.3 M params)" t info --model mlp --batch 1048576 --channels 51731 --image-size 18441
check "the message names the tensor, its shape and the limit: $out" "$(all_of "tensor 'input': shape (1048576,51731,18441,18441)" "more than a tensor may take" "64 PiB")"
expect_exit 2 "flatten of an overflowing input" t info --model mlp --batch 1048576 --image-size 32768 --channels 65536 --classes 16777216
check "not the old 'target (1048576,0)': $out" "$( [[ $(has "target (1048576,0)") == 0 && $(has "tensor 'input'") == 1 ]] && echo 1 || echo 0)"
expect_exit 0 "a model of 157 PiB is reported, not an allocator error" t info --model densenet121 --batch 1048576 --image-size 8192 --json
check "its peak is above 1 PiB: ${out:0:300}" "$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(1 if d['vanilla_peak_load_bytes'] > 2**50 else 0)" "$out" 2>/dev/null || echo 0)"

# -- plans above the budget or the device: exit 3 with the sizes, nothing written
expect_exit 3 "a plan above --budget" t plan --model cnn --batch 16 --budget 1MiB
check "the message names the budget and the planned footprints: $out" "$(all_of "the budget is not met" "footprints summing to" "more than --budget 1.0 MiB (1048576 bytes)")"
check "the report is still printed" "$(has "cnn:16 ")"
# (resnet50 at batch 256 fits the 11 GiB card once TENSILE plans on to the
# device's memory, option fit: at 512 nothing does)
expect_exit 0 "a plan planned on to the device's memory" t plan --model resnet50 --batch 256 --profile rtx2080ti
expect_exit 3 "a plan above the device, --out not written" t plan --model resnet50 --batch 512 --profile rtx2080ti --out "$tmp/p.json"
check "the message names the profile's memory: $out" "$(all_of "of profile 'rtx2080ti' (its mem_bytes)" "--out not written")"
check "no plan file" "$([ ! -e "$tmp/p.json" ] && echo 1 || echo 0)"
expect_exit 3 "66 TiB on a 48 GiB a6000" t plan --model resnet50 --batch 1048576
expect_exit 2 "--budget above the device" t plan --model cnn --budget 100GiB
check "the message names the profile: $out" "$(has "more than the device of profile 'a6000' has")"
python3 - "$tmp" <<'EOF'
import json, sys
d = sys.argv[1]
w = {"job": "j", "period_us": 3, "optimizer_begin": 2,
     "tensors": [{"name": "x", "bytes": 1000, "kind": "input"}, {"name": "a", "bytes": 2**48, "kind": "activation"},
                 {"name": "b", "bytes": 4000, "kind": "activation"}, {"name": "c", "bytes": 8, "kind": "activation"}],
     "ops": [{"name": "f", "start_us": 0, "end_us": 1, "workspace": 0, "inputs": ["x"], "outputs": ["a"]},
             {"name": "g", "start_us": 1, "end_us": 2, "workspace": 0, "inputs": ["a"], "outputs": ["b"]},
             {"name": "h", "start_us": 2, "end_us": 3, "workspace": 0, "inputs": ["b", "a"], "outputs": ["c"]}]}
json.dump(w, open(d + "/huge.json", "w"))
w["tensors"][1]["bytes"] = 4000
json.dump(w, open(d + "/ok.json", "w"))
w["job"] = "a\u001b[31mred"
json.dump(w, open(d + "/ctrl.json", "w"))
EOF
expect_exit 3 "a workload with a 256 TiB tensor" t plan --workload "$tmp/huge.json"
check "says it does not fit: $out" "$(has "256.0 TiB")"

# -- profiles: tiny rates, tiny memory, control characters, FIFOs
python3 - "$src/profiles/a6000.json" "$tmp" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for name, (k, v) in {"denorm": ("flops", 5e-324), "tinybw": ("mem_bw", 1e-300), "tinymem": ("mem_bytes", 1),
                     "ctrl": ("name", "a\n\u001b[31mred")}.items():
    e = dict(d); e[k] = v
    json.dump(e, open("%s/prof_%s.json" % (sys.argv[2], name), "w"))
EOF
expect_exit 2 "a denormal FLOP rate" t plan --model cnn --profile "$tmp/prof_denorm.json"
check "the message names the field and the range: $out" "$(has "field 'flops': 4.94065645841247e-324 is too small (expected a value in \[1e+06, 1e+18\])")"
expect_exit 2 "a tiny memory bandwidth" t plan --model cnn --profile "$tmp/prof_tinybw.json"
check "the message names mem_bw: $out" "$(has "field 'mem_bw'")"
expect_exit 3 "a device of 1 byte" t plan --model cnn --profile "$tmp/prof_tinymem.json"
expect_exit 2 "control characters in a profile's name" t plan --model cnn --profile "$tmp/prof_ctrl.json"
check "not printed raw: $out" "$( [[ $(has "control character") == 1 && $(printf '%s' "$out" | grep -c $'\x1b') == 0 ]] && echo 1 || echo 0)"
expect_exit 2 "control characters in a workload's job" t plan --workload "$tmp/ctrl.json"
mkfifo "$tmp/fifo.json"
expect_exit 2 "a FIFO as a workload (once a hang)" t plan --workload "$tmp/fifo.json"
check "the message says FIFO: $out" "$(has "a FIFO, not a regular file")"
expect_exit 2 "a FIFO as a profile (once a hang)" t plan --model cnn --profile "$tmp/fifo.json"
expect_exit 2 "/dev/zero as a workload" t plan --workload /dev/zero
head -c $((17 << 20)) /dev/zero > "$tmp/big.json"
expect_exit 2 "a workload above 16 MiB is refused unread" t plan --workload "$tmp/big.json"
check "the message names the limit: $out" "$(has "larger than the limit of 16777216 bytes")"

# -- --jobs: messages name --jobs; generated names are told apart
expect_exit 2 "an unknown model in --jobs" t plan --jobs bogus:16
check "the message names --jobs: $out" "$(has "--jobs: unknown model 'bogus'")"
expect_exit 2 "a --jobs entry without a model" t plan --jobs :16
check "the message names the entry: $out" "$(has "--jobs: ':16' (job 1) has no model name")"
expect_exit 2 "an empty --jobs entry" t plan --jobs cnn:16,,mlp:2
expect_exit 0 "the same job twice with --out" t plan --jobs cnn:16,cnn:16 --out "$tmp/two.json"
check "both plans in the file, told apart" "$(python3 -c "import json,sys; j=[x['job'] for x in json.load(open(sys.argv[1]))['jobs']]; print(1 if j==['cnn:16','cnn:16#2'] else 0)" "$tmp/two.json" 2>/dev/null || echo 0)"
expect_exit 2 "two workload files of one job name with --out" t plan --workload "$tmp/ok.json" --workload "$tmp/ok.json" --out "$tmp/two.json"
check "the message names both files: $out" "$(has "jobs 1 ($tmp/ok.json) and 2 ($tmp/ok.json) are both named 'j'")"

# -- run and train: percentages, throttles, example counts, the profile
expect_exit 2 "--device-memory that rounds to 0 bytes (once 'budget none')" t run --model cnn "${quick[@]}" --batch 32 --iterations 2 --train-examples 64 --device-memory 0.0000001%
check "the message names the percentage: $out" "$(has "--device-memory: 1e-07% of vanilla's peak load")"
expect_exit 2 "--device-memory 1e-300%" t run --model mlp "${quick[@]}" --train-examples 64 --iterations 4 --batch 16 --device-memory 1e-300%
expect_exit 2 "--pcie-gbps 1e-300 (once unthrottled)" t run --model cnn "${quick[@]}" --iterations 4 --train-examples 128 --device-memory 60% --pcie-gbps 1e-300
check "the message names the floor: $out" "$(has "below the floor of 0.001 GB/s")"
expect_exit 2 "--pcie-gbps 0.000001 (once about 21 h)" t run --model cnn "${quick[@]}" --iterations 4 --train-examples 128 --device-memory 60% --pcie-gbps 0.000001
expect_exit 2 "train --train-examples 2^63-1 (once SIGABRT)" t train --model mlp "${quick[@]}" --train-examples 9223372036854775807
check "the message names the range: $out" "$(has "--train-examples: 9223372036854775807 is out of range (expected 1..2147483648)")"
expect_exit 2 "train --train-examples 4e9 (once SIGABRT)" t train --model mlp "${quick[@]}" --train-examples 4000000000
expect_exit 2 "run --train-examples 2^63-1 (once 'out of host memory')" t run --model mlp "${quick[@]}" --train-examples 9223372036854775807
expect_exit 1 "a shuffle order the host cannot hold (once SIGABRT)" prlimit --as=$((2 << 30)) "$bin" train --model mlp "${quick[@]}" --train-examples 1000000000 --device-memory 64MiB
check "the message names the examples and the bytes: $out" "$(has "batcher: host out of memory for the order of 1000000000 examples")"
expect_exit 2 "--batch larger than the training set" t train --model cnn "${quick[@]}" --train-examples 10 --batch 64
mkdir -p "$tmp/prof" && : > "$tmp/prof/cpu-local.json"
expect_exit 1 "an empty cpu-local.json (once rough figures, silently)" env TSL_PROFILE_DIR="$tmp/prof" timeout 60 "$bin" run --model cnn "${quick[@]}" --batch 64 --iterations 2 --train-examples 128 --device-memory 60%
check "the message names the file, before any run: $out" "$( [[ $(has "$tmp/prof/cpu-local.json:1:0: not valid JSON") == 1 && $(has "vanilla in") == 0 ]] && echo 1 || echo 0)"

# -- outputs: stdout, full disks (a file size limit), unwritable paths
for c in "info --model cnn" "info --model cnn --json" "plan --model cnn --json" "--help" "run --help" \
         "train --model mlp --dataset synthetic --train-examples 128 --test-examples 64 --threads 1 --quiet --json" \
         "run --model mlp --dataset synthetic --train-examples 128 --iterations 2 --threads 1 --quiet --json" \
         "calibrate --quick --json --out $tmp/cal.json"; do
  # shellcheck disable=SC2086
  out=$(timeout 60 "$bin" $c 2>&1 >/dev/full); rc=$?
  check "'$c > /dev/full' exits 1 (exit $rc): $out" "$( [[ $rc == 1 && $(has "cannot write standard output: No space left on device") == 1 ]] && echo 1 || echo 0)"
done
echo old > "$tmp/keep.json"
out=$( (trap '' XFSZ; prlimit --fsize=4096 "$bin" plan --model resnet50 --out "$tmp/keep.json" --trace "$tmp/trace.json") 2>&1 >/dev/null); rc=$?
check "plan --out on a full disk exits 1 (exit $rc): $out" "$( [[ $rc == 1 && $(has "File too large") == 1 ]] && echo 1 || echo 0)"
check "the old plan is kept, no trace, no temporary file: $(ls "$tmp")" "$( [[ $(cat "$tmp/keep.json") == old && ! -e "$tmp/trace.json" && -z $(ls "$tmp" | grep '\.tmp\.') ]] && echo 1 || echo 0)"
out=$( (trap '' XFSZ; prlimit --fsize=100 "$bin" calibrate --quick --out "$tmp/cal2.json") 2>&1 >/dev/null); rc=$?
check "calibrate --out on a full disk exits 1 and leaves no profile (exit $rc): $out" "$( [[ $rc == 1 && ! -e "$tmp/cal2.json" ]] && echo 1 || echo 0)"
start=$SECONDS
expect_exit 2 "run --trace into a missing folder fails before the run" t run --model cnn "${quick[@]}" --iterations 50 --trace "$tmp/no/such/t.json"
check "at once, naming the path: $out" "$( [[ $((SECONDS - start)) -lt 5 && $(has "--trace: $tmp/no/such/t.json: cannot write output") == 1 ]] && echo 1 || echo 0)"
expect_exit 2 "plan --out into a folder" t plan --model cnn --out "$tmp"
expect_exit 2 "calibrate --out into a missing folder" t calibrate --quick --out "$tmp/no/such/c.json"

# -- signals: a message, 128 + signal, no partial output
timeout 60 "$bin" run --model cnn "${quick[@]}" --iterations 100000 --trace "$tmp/sig.json" > /dev/null 2> "$tmp/sig.err" &
pid=$!
sleep 3
kill -INT $pid
wait $pid; rc=$?
check "SIGINT ends a run with 130 (exit $rc): $(cat "$tmp/sig.err")" "$( [[ $rc == 130 ]] && grep -q "tensile run: interrupted (SIGINT)" "$tmp/sig.err" && echo 1 || echo 0)"
check "no trace or temporary file left" "$( [[ -z $(ls "$tmp" | grep sig.json) ]] && echo 1 || echo 0)"

checks_done
