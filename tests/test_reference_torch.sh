#!/usr/bin/env bash
# One full training step of every zoo model (the loss, every parameter
# gradient and the batch-norm running statistics) in float64 with Tensile's
# reference kernels, against PyTorch + torchvision in float64: torchvision's
# own definitions of resnet18/50, vgg11/16/19, inception_v3 and densenet121,
# plain definitions in tests/ref/torch_step.py for mlp, cnn, inception4
# (timm's) and unet. The dropout masks Tensile drew are applied in torch.
# Skipped (exit 77, reported as SKIPPED by ctest) only if Debian's
# python3-torch and python3-torchvision cannot be installed; never passes
# silently.
#
# Shapes: batch 2 at each model's smallest image; batch 4 for the models
# with batch norm, whose last maps are 1x1 there: with 2 values per channel
# a batch norm's backward cancels to almost nothing, and the step becomes so
# ill-conditioned that torch alone moves resnet50's gradients by 5e-5 when
# its input moves by 1e-15. Tolerances: about 100 times torch's own noise
# on each step (torch_step.py --noise prints it): 5e-15 where there is no
# batch norm, 2e-13 to 1.4e-9 with it.
set -uo pipefail
src=${TSL_SOURCE_DIR:?}; build=${TSL_BUILD_DIR:?}
PY=${TORCH_PYTHON:-/usr/bin/python3}
if ! bash "$src/scripts/pydeps.sh" torch; then
  echo "SKIPPED: python3-torch and python3-torchvision could not be installed (apt) for $PY;" \
       "the independent reference was not run"
  exit 77
fi
dump="$build/tsl_dump_step"
[ -x "$dump" ] || { echo "FAIL: $dump is not built"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# model batch image channels classes tolerance
MODELS=(
  "mlp         2 28 1 10 1e-12"
  "cnn         2 28 1 10 1e-12"
  "vgg11       2 32 3 10 1e-12"
  "vgg16       2 32 3 10 1e-12"
  "vgg19       2 32 3 10 1e-12"
  "resnet18    4 32 3 10 1e-10"
  "resnet50    4 32 3 10 1e-8"
  "inception3  4 75 3 10 1e-8"
  "inception4  4 75 3 10 1e-7"
  "densenet121 4 32 3 10 1e-8"
  "unet        2 16 3  2 1e-12"
)
# Writes each dump, then its line "DIR TOL" for torch_step.py, which
# compares (and deletes) it while the next one is written.
dumps() {
  local fail=0
  for spec in "${MODELS[@]}"; do
    set -- $spec
    mkdir -p "$tmp/$1"
    if "$dump" "$1" "$2" "$3" "$4" "$5" "$tmp/$1" f64 >/dev/null; then
      echo "$tmp/$1 $6"
    else
      echo "FAIL: tsl_dump_step $1 $2 $3 $4 $5 f64" >&2
      fail=1
    fi
  done
  return $fail
}
t0=$SECONDS
dumps | "$PY" "$src/tests/ref/torch_step.py" --delete --expect ${#MODELS[@]} -
rc=("${PIPESTATUS[@]}")
echo "$((SECONDS - t0)) s"
[ "${rc[0]}" -eq 0 ] && [ "${rc[1]}" -eq 0 ]
