#!/usr/bin/env bash
# make bench: every benchmark of bench/, results on stdout (markdown tables).
set -euo pipefail
build=${1:-build}
"$build/bench_train" "${@:2}"
"$build/bench_plan" --reps 5
