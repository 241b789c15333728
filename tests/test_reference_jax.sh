#!/usr/bin/env bash
# One full training step (loss and every parameter gradient, and the batch
# norm running statistics) of cnn and resnet18 against JAX in float64.
# Skipped (exit 77, reported as SKIPPED by ctest) only if JAX cannot be
# installed from the pip index (scripts/pydeps.sh gives up within seconds
# when the index cannot be reached); never passes silently. Every zoo model,
# in float64, is checked against PyTorch by test_reference_torch.sh.
set -uo pipefail
src=${TSL_SOURCE_DIR:?}; build=${TSL_BUILD_DIR:?}
if ! bash "$src/scripts/pydeps.sh" jax; then
  echo "SKIPPED: jax could not be installed from the pip index; the independent reference was not run"
  exit 77
fi
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
run() { # model batch image channels classes
  mkdir -p "$tmp/$1"
  "$build/tsl_dump_step" "$1" "$2" "$3" "$4" "$5" "$tmp/$1" || { echo "FAIL: dump of $1"; fail=1; return; }
  python3 "$src/tests/ref/jax_step.py" "$tmp/$1" 1e-4 || fail=1
}
run cnn 8 28 1 10
run resnet18 4 64 3 10
exit $fail
