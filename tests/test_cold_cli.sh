#!/usr/bin/env bash
# Cold start from the command line (docs/PREDICTOR.md): `tensile profile` on
# its tiny grid writes the samples and the predictor and reports accuracy;
# `tensile run --cold-start` plans from it and reports both phases and the
# first iteration; bad arguments and bad files are refused naming them.
set -uo pipefail
bin=${1:?usage: test_cold_cli.sh TENSILE}
. "$(dirname "$0")/cli/checks.sh"
bin=$(readlink -f "$bin")
tmp=$(mktemp -d)
cleanup() { [ -n "${dpid:-}" ] && kill -9 "$dpid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT

expect_exit 0 "tensile profile --help" "$bin" profile --help
expect_exit 2 "profile: bad minutes" "$bin" profile --minutes zero
check "bad minutes message: $out" "$(has "--minutes")"
expect_exit 2 "profile: folder that cannot be made" "$bin" profile --out /proc/nope/x --small
expect_exit 1 "profile: missing samples file" "$bin" profile --samples "$tmp/none.tss" --out "$tmp/p0"
check "missing samples message names the file: $out" "$(has "$tmp/none.tss")"
printf 'tensile-op-samples 1\nfeatures 12\nrelu 1 0 0 0\n' > "$tmp/bad.tss"
expect_exit 1 "profile: malformed samples" "$bin" profile --samples "$tmp/bad.tss" --out "$tmp/p0"
check "malformed samples message names file and line: $out" "$(has "$tmp/bad.tss:3:")"

json=$("$bin" profile --small --minutes 0.02 --repeats 1 --max-load 1 --epochs 20 --out "$tmp/p" --quiet --json 2>"$tmp/err"); rc=$?
check "tiny profile exits 0 (rc $rc): $(cat "$tmp/err")" "$([ $rc = 0 ] && echo 1 || echo 0)"
check "samples and predictor written" "$([ -s "$tmp/p/op-samples.tss" ] && [ -s "$tmp/p/predictor.tsp" ] && echo 1 || echo 0)"
check "profile --json: accuracy per op type beside the cost model, resnet50 timing: $json" "$(python3 -c "
import json,sys
d=json.loads(sys.argv[1])
a=d['accuracy']
ok = d['samples']>0 and len(a)>5 and d['resnet50_ops']>0 and d['resnet50_predict_ms']>=0
ok = ok and all(k in a[0] for k in ('op','kept','mlp','linear','roofline','cost_model')) and 'mape' in a[0]['mlp']
print(1 if ok else 0)" "$json" 2>/dev/null || echo 0)"
head -c 300 "$tmp/p/predictor.tsp" > "$tmp/trunc.tsp"

run=("$bin" run --model mlp --batch 8 --dataset synthetic --image-size 8 --iterations 6 --threads 1 --quiet)
expect_exit 2 "cold start with vanilla" "${run[@]}" --policy vanilla --cold-start
expect_exit 2 "--predictor without --cold-start" "${run[@]}" --predictor "$tmp/p/predictor.tsp"
expect_exit 2 "truncated predictor" "${run[@]}" --cold-start --predictor "$tmp/trunc.tsp"
check "truncated predictor message names the file and line: $out" "$(has "$tmp/trunc.tsp:")"
expect_exit 2 "update after the last iteration" "${run[@]}" --cold-start --predictor "$tmp/p/predictor.tsp" --cold-start-iters 6
json=$("${run[@]}" --cold-start --predictor "$tmp/p/predictor.tsp" --cold-start-iters 2 --json 2>"$tmp/err" | tail -n 1); rc=$?
check "run --cold-start exits 0: $(cat "$tmp/err")" "$([ $rc = 0 ] && echo 1 || echo 0)"
check "run --cold-start --json: first_iteration_eor, phases.cs/up.{msr,eor,cbr}, update at 2: $json" "$(python3 -c "
import json,sys
d=json.loads(sys.argv[1])
p=d['phases']
ok = d['first_iteration_eor']>0 and all(k in p[ph] for ph in ('cs','up') for k in ('msr','eor','cbr'))
ok = ok and d['updated'] and d['update_iteration']==2 and p['cs']['iterations']>=2 and p['up']['iterations']>=1
ok = ok and d['identical']
print(1 if ok else 0)" "$json" 2>/dev/null || echo 0)"
out=$("${run[@]}" --cold-start --predictor "$tmp/p/predictor.tsp" --cold-start-iters 2 2>&1)
check "run --cold-start text names both phases and the first iteration: $out" "$(grep -q "TENSILE_cs" <<<"$out" && grep -q "TENSILE_up" <<<"$out" && grep -q "first iteration" <<<"$out" && echo 1 || echo 0)"

# ---- the daemon: a job planned and admitted from its predicted workload
export XDG_RUNTIME_DIR=$tmp
mkdir -p "$tmp/tensile" && chmod 700 "$tmp/tensile"
sock=$tmp/tensile/tensiled.sock
"$bin" serve --device-memory 256MiB --socket "$sock" --foreground >"$tmp/daemon.log" 2>&1 &
dpid=$!
for ((i = 0; i < 100; i++)); do [ -S "$sock" ] && break; sleep 0.1; done
job=(--model mlp --batch 8 --dataset synthetic --image-size 8 --iterations 3 --threads 1)
solo=$("$bin" run --policy vanilla "${job[@]}" --quiet --json 2>/dev/null | tail -1 |
       python3 -c "import json,sys; print(json.load(sys.stdin)['vanilla']['param_checksum'])")
json=$("$bin" run --connect --socket "$sock" "${job[@]}" --predictor "$tmp/p/predictor.tsp" --json 2>"$tmp/err" | tail -1); rc=$?
check "a daemon job from its predicted workload exits 0 (rc $rc): $(cat "$tmp/err")" "$([ $rc = 0 ] && echo 1 || echo 0)"
check "its workload was predicted, no warm-up, parameters as a solo run's: $json" "$(python3 -c "
import json,sys
d=json.loads(sys.argv[1])
print(1 if d['latencies']=='predicted' and d['param_checksum']==sys.argv[2] and d['first_iteration_ms']>0 else 0)" "$json" "$solo" 2>/dev/null || echo 0)"
check "the job said where its latencies came from" "$(grep -q "predicted by $tmp/p/predictor.tsp" "$tmp/err" && echo 1 || echo 0)"
json=$("$bin" run --connect --socket "$sock" "${job[@]}" --cost-model --json 2>/dev/null | tail -1)
check "--cost-model: the cost model's workload: $json" "$(python3 -c "
import json,sys; print(1 if json.loads(sys.argv[1])['latencies']=='cost_model' else 0)" "$json" 2>/dev/null || echo 0)"
expect_exit 2 "a daemon job with a truncated predictor" "$bin" run --connect --socket "$sock" "${job[@]}" --predictor "$tmp/trunc.tsp"
check "its message names the file: $out" "$(has "$tmp/trunc.tsp:")"
kill "$dpid"; wait "$dpid" 2>/dev/null; dpid=
checks_done
