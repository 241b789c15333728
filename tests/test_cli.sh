#!/usr/bin/env bash
# The tensile command as a user meets it: help, bad arguments (exit 2 with a
# message naming the option and value), info --json keys, a short training
# run's JSON summary, and an out-of-memory run (exit 3 naming the tensor).
set -uo pipefail
bin=${1:?usage: test_cli.sh TENSILE}
. "$(dirname "$0")/cli/checks.sh"
expect_exit 0 "tensile --help" "$bin" --help
expect_exit 0 "tensile info --help" "$bin" info --help
expect_exit 0 "tensile train --help" "$bin" train --help
expect_exit 2 "no command" "$bin"
expect_exit 2 "unknown command" "$bin" frobnicate
expect_exit 2 "unknown model" "$bin" info --model resnet51
check "unknown model message lists models: $out" "$(grep -q "resnet51" <<<"$out" && grep -q "resnet50" <<<"$out" && echo 1 || echo 0)"
expect_exit 2 "bad batch" "$bin" info --model cnn --batch zero
check "bad batch message: $out" "$(grep -q -- "--batch: 'zero' is not an integer" <<<"$out" && echo 1 || echo 0)"
expect_exit 2 "negative batch" "$bin" info --model cnn --batch -3
expect_exit 2 "bad size" "$bin" train --device-memory 4XB
check "bad size message: $out" "$(grep -q -- "--device-memory: '4XB' is not a size" <<<"$out" && echo 1 || echo 0)"
expect_exit 2 "bad optimizer" "$bin" train --optimizer rmsprop
check "bad optimizer message: $out" "$(grep -q "expected one of: sgd, adam" <<<"$out" && echo 1 || echo 0)"
expect_exit 2 "missing value" "$bin" train --lr
expect_exit 2 "stray argument" "$bin" info --model cnn extra
expect_exit 2 "image size with fashion-mnist" "$bin" train --image-size 32
expect_exit 2 "image too small for the model (the arguments are at fault)" "$bin" info --model vgg16 --image-size 16
check "too-small image message: $out" "$(grep -q "image_size" <<<"$out" && echo 1 || echo 0)"

json=$("$bin" info --model resnet50 --batch 16 --json 2>/dev/null)
for k in model batch params param_bytes ops tensors vanilla_peak_load_bytes; do
  check "info --json has $k" "$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(1 if '$k' in d else 0)" "$json")"
done
check "resnet50 params" "$(python3 -c "import json,sys; print(1 if json.loads(sys.argv[1])['params']==25557032 else 0)" "$json")"

out=$("$bin" train --model mlp --epochs 1 --batch 64 --train-examples 1280 --test-examples 640 --threads 1 --quiet --json 2>/dev/null); rc=$?
check "short training run exits 0 (rc $rc)" "$([ $rc = 0 ] && echo 1 || echo 0)"
last=$(tail -n 1 <<<"$out")
for k in test_accuracy peak_load_bytes footprint_bytes iter_ms param_checksum; do
  check "train --json has $k: $last" "$(python3 -c "import json,sys; d=json.loads(sys.argv[1]); print(1 if '$k' in d else 0)" "$last" 2>/dev/null || echo 0)"
done
check "accuracy above chance after 20 steps: $last" "$(python3 -c "import json,sys; print(1 if json.loads(sys.argv[1])['test_accuracy']>0.4 else 0)" "$last" 2>/dev/null || echo 0)"
again=$("$bin" train --model mlp --epochs 1 --batch 64 --train-examples 1280 --test-examples 640 --threads 1 --quiet --json 2>/dev/null | tail -n 1)
check "same seed, same parameter checksum" "$(python3 -c "import json,sys; print(1 if json.loads(sys.argv[1])['param_checksum']==json.loads(sys.argv[2])['param_checksum'] else 0)" "$last" "$again" 2>/dev/null || echo 0)"

expect_exit 3 "device too small" "$bin" train --model cnn --batch 64 --train-examples 640 --test-examples 640 --device-memory 8MiB --quiet
check "OOM message names the tensor and the capacity: $out" "$(grep -q "device out of memory" <<<"$out" && grep -q "cannot allocate" <<<"$out" && grep -q "8388608 bytes" <<<"$out" && echo 1 || echo 0)"

# tensile plan
expect_exit 0 "tensile plan --help" "$bin" plan --help
expect_exit 2 "plan without a job" "$bin" plan
expect_exit 2 "plan with an unknown profile" "$bin" plan --model cnn --profile nosuchgpu
check "unknown profile message: $out" "$(grep -q "nosuchgpu" <<<"$out" && echo 1 || echo 0)"
expect_exit 2 "plan with a malformed --jobs" "$bin" plan --jobs resnet18
check "malformed jobs message: $out" "$(grep -q "model:batch" <<<"$out" && echo 1 || echo 0)"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
json=$("$bin" plan --jobs cnn:16,mlp:32 --profile a6000 --out "$tmp/plan.json" --trace "$tmp/trace.json" --json 2>/dev/null); rc=$?
check "plan of two jobs exits 0 (rc $rc)" "$([ $rc = 0 ] && echo 1 || echo 0)"
check "plan --json has jobs[].{model,batch,vanilla_peak_bytes,planned_peak_bytes,msr,eor,swaps,recomputes,bytes_h2d,bytes_d2h}, global and planning_ms" \
  "$(python3 -c "
import json,sys
d=json.loads(sys.argv[1])
job=['model','batch','vanilla_peak_bytes','planned_peak_bytes','msr','eor','swaps','recomputes','bytes_h2d','bytes_d2h']
glo=['vanilla_peak_bytes','planned_peak_bytes','simulated_peak_bytes','msr','eor']
ok=len(d['jobs'])==2 and all(k in j for j in d['jobs'] for k in job) and all(k in d['global'] for k in glo) and 'planning_ms' in d
ok=ok and all(j['planned_peak_bytes']<=j['vanilla_peak_bytes'] for j in d['jobs'])
print(1 if ok else 0)" "$json" 2>/dev/null || echo 0)"
check "plan --out wrote two jobs' plans" "$(python3 -c "import json,sys; print(1 if len(json.load(open(sys.argv[1]))['jobs'])==2 else 0)" "$tmp/plan.json" 2>/dev/null || echo 0)"
check "plan --trace wrote a Chrome trace" "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); ev=d['traceEvents'] if isinstance(d,dict) else d; print(1 if any(e.get('ph')=='C' for e in ev) and any(e.get('ph')=='X' for e in ev) else 0)" "$tmp/trace.json" 2>/dev/null || echo 0)"
printf '{"job": "j", "period_us": 3, "optimizer_begin": 2, "tensors": [' > "$tmp/w.json"
printf '{"name": "x", "bytes": 1000, "kind": "input"}, {"name": "a", "bytes": 4000, "kind": "activation"},' >> "$tmp/w.json"
printf '{"name": "b", "bytes": 4000, "kind": "activation"}], "ops": [' >> "$tmp/w.json"
printf '{"name": "f", "start_us": 0, "end_us": 1, "workspace": 0, "inputs": ["x"], "outputs": ["a"]},' >> "$tmp/w.json"
printf '{"name": "g", "start_us": 1, "end_us": 2, "workspace": 0, "inputs": ["a"], "outputs": ["b"]},' >> "$tmp/w.json"
printf '{"name": "h", "start_us": 2, "end_us": 3, "workspace": 0, "inputs": ["b", "a"], "outputs": ["x2"]}]}' >> "$tmp/w.json"
expect_exit 2 "a workload naming an unknown tensor (a bad file named by an option)" "$bin" plan --workload "$tmp/w.json"
check "workload error names the file and field: $out" "$(grep -q "w.json" <<<"$out" && grep -q "ops\[2\].outputs\[0\]" <<<"$out" && echo 1 || echo 0)"
sed -i 's/"outputs": \["x2"\]/"outputs": ["b2"]/; s/"kind": "activation"}\], "ops"/"kind": "activation"}, {"name": "b2", "bytes": 8, "kind": "activation"}], "ops"/' "$tmp/w.json"
expect_exit 0 "a valid workload file plans" "$bin" plan --workload "$tmp/w.json" --json

# tensile run
expect_exit 0 "tensile run --help" "$bin" run --help
expect_exit 2 "run without --model" "$bin" run
expect_exit 2 "run with a bad budget" "$bin" run --model cnn --device-memory 12x
check "run bad budget message: $out" "$(grep -q -- "--device-memory: '12x' is not a positive size" <<<"$out" && echo 1 || echo 0)"
expect_exit 2 "run with --iterations and --epochs" "$bin" run --model cnn --iterations 3 --epochs 1
expect_exit 3 "vanilla policy below vanilla's peak" "$bin" run --model cnn --batch 64 --iterations 2 --device-memory 60% --policy vanilla --quiet
check "vanilla refusal names the tensor and sizes: $out" "$(grep -Eq "refused: .*cannot allocate (activation|workspace) '.*' of [0-9]* bytes" <<<"$out" && echo 1 || echo 0)"
json=$("$bin" run --model cnn --batch 64 --iterations 4 --device-memory 70% --threads 2 --trace "$tmp/run_trace.json" --json --quiet 2>/dev/null); rc=$?
check "run in 70% exits 0 (rc $rc)" "$([ $rc = 0 ] && echo 1 || echo 0)"
check "run --json keys, vanilla refused, identical parameters" "$(python3 -c "
import json,sys; d=json.loads(sys.argv[1])
top=['model','batch','policy','iterations','vanilla','scheduled','msr','eor','cbr','predicted_msr','predicted_eor']
both=['peak_load_bytes','footprint_bytes','iter_ms','param_checksum']
sch=['swaps','recomputes','passive_swaps','evictions','stall_ms','replans']
ok=all(k in d for k in top) and all(k in d['vanilla'] and k in d['scheduled'] for k in both) and all(k in d['scheduled'] for k in sch)
ok=ok and d['vanilla']['refused'] and d['identical'] and d['vanilla']['param_checksum']==d['scheduled']['param_checksum']
ok=ok and d['scheduled']['peak_load_bytes'] <= d['device_memory_bytes'] < d['vanilla']['peak_load_bytes']
print(1 if ok else 0)" "$json")"
json=$("$bin" run --model cnn --batch 64 --iterations 3 --device-memory plan+1% --json --quiet 2>/dev/null); rc=$?
check "run in plan+1% exits 0 (rc $rc)" "$([ $rc = 0 ] && echo 1 || echo 0)"
check "plan+1%: the device is the plan's footprint plus 1 % (256-byte units), the run fits it, results identical" "$(python3 -c "
import json,sys; d=json.loads(sys.argv[1]); s=d['scheduled']; pf=s['predicted_footprint_bytes']
want=-(-int(pf*1.01)//256)*256
print(1 if d['device_memory_bytes']==want and s['footprint_bytes']<=want and d['budget_met'] and d['identical'] else 0)" "$json" 2>/dev/null || echo 0)"
expect_exit 2 "plan budget with the vanilla policy" "$bin" run --model cnn --policy vanilla --device-memory plan
expect_exit 2 "plan budget, bad suffix" "$bin" run --model cnn --device-memory plan-3%
check "plan suffix message: $out" "$(grep -q -- "after 'plan' comes nothing or +P%" <<<"$out" && echo 1 || echo 0)"
check "run --trace wrote a Chrome trace" "$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(1 if d else 0)" "$tmp/run_trace.json" 2>/dev/null || echo 0)"

checks_done
