#!/usr/bin/env bash
# The tensile command as a user meets it: help, bad arguments (exit 2 with a
# message naming the option and value), info --json keys, a short training
# run's JSON summary, and an out-of-memory run (exit 3 naming the tensor).
set -uo pipefail
bin=${1:?usage: test_cli.sh TENSILE}
fails=0; passes=0
check() { # description, condition (already evaluated as 0/1)
  if [ "$2" = 1 ]; then passes=$((passes+1)); else echo "FAIL: $1"; fails=$((fails+1)); fi
}
expect_exit() { # want, description, command...
  local want=$1 desc=$2; shift 2
  out=$("$@" 2>&1); rc=$?
  check "$desc (exit $rc, want $want): $out" "$([ $rc = "$want" ] && echo 1 || echo 0)"
}
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
expect_exit 1 "image too small for the model" "$bin" info --model vgg16 --image-size 16
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

echo "$passes passed, $fails failed"
[ "$fails" = 0 ]
