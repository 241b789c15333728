#!/usr/bin/env bash
# make demo: train the small CNN on Fashion-MNIST for one epoch inside a
# device-memory budget and report accuracy, time and memory; then the same
# training in 60 % of vanilla's peak load: vanilla refused (out of memory),
# TENSILE completing with the same accuracy and bitwise identical weights.
set -euo pipefail
bin=${1:-build/tensile}
echo "== the model's memory, from a dry run (nothing allocated)"
"$bin" info --model cnn --batch 64 --image-size 28 --channels 1 --classes 10
echo
echo "== training cnn on Fashion-MNIST: 1 epoch, batch 64, SGD (momentum 0.9), 256 MiB device"
start=$(date +%s%N)
"$bin" train --model cnn --dataset fashion-mnist --epochs 1 --batch 64 --device-memory 256MiB
end=$(date +%s%N)
ms=$(( (end - start) / 1000000 ))
printf 'demo training took %d.%01d s on %s CPUs\n' $((ms / 1000)) $(((ms % 1000) / 100)) "$(nproc)"
echo
echo "== what Tensile is for: the same training in 60% of vanilla's peak load"
echo "   (vanilla is tried first and refused; TENSILE plans swaps and recomputations"
echo "   from vanilla's measured kernel times and runs the plan, evicting when"
echo "   the budget is tighter than the plan)"
start=$(date +%s%N)
"$bin" run --model cnn --dataset fashion-mnist --epochs 1 --batch 64 --device-memory 60% \
    --policy tensile --eval
end=$(date +%s%N)
ms=$(( (end - start) / 1000000 ))
printf 'vanilla + tensile training and evaluation took %d.%01d s on %s CPUs\n' \
    $((ms / 1000)) $(((ms % 1000) / 100)) "$(nproc)"
