#!/usr/bin/env bash
# Fuzzes the libFuzzer harnesses of fuzz/ for a while.
#
#   scripts/fuzz.sh [SECONDS] [HARNESS|all]     defaults: 60 s, fuzz_idx
#   scripts/fuzz.sh --build-only [HARNESS|all]  build, run nothing
#
# Configures a clang build of the project with TSL_FUZZ=ON (every library
# instrumented for coverage and checked by ASan and UBSan) in
# $FUZZ_BUILD/cmake (default build-fuzz/cmake) and builds the harness's
# target: fuzz/HARNESS.c linked with the libraries named on its
# "fuzz-link:" line, the very line the suite's replay test fuzz/HARNESS_replay
# is built from, so a harness that links in the suite links here. Then runs
# it for SECONDS over the seed corpus fuzz/corpus/HARNESS ("all": each
# harness in turn, SECONDS each). New inputs go to $FUZZ_BUILD/HARNESS/corpus
# (the seed folder is only read); a crash, leak or sanitizer report stops
# the run, is saved under $FUZZ_BUILD/HARNESS/ (crash-*, leak-*, timeout-*,
# oom-*) and makes the script exit non-zero. The last lines of each run
# (executions, coverage, features, corpus) are kept in
# $FUZZ_BUILD/HARNESS/stats.txt. Replay one input:
# $FUZZ_BUILD/cmake/HARNESS FILE. Minimise it and add it to
# fuzz/corpus/HARNESS once the bug is fixed.
# Extra libFuzzer options: FUZZ_ARGS="-max_len=65536 -jobs=2" scripts/fuzz.sh
# Installs clang and libclang-rt-14-dev with apt-get if they are missing,
# unless FUZZ_NO_INSTALL=1: then it exits 77 (skipped) without them.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build_only=0
if [ "${1:-}" = "--build-only" ]; then
  build_only=1
  shift
  secs=0
else
  secs="${1:-60}"
  [[ "$secs" =~ ^[0-9]+$ && "$secs" -gt 0 ]] || { echo "fuzz.sh: SECONDS must be a positive integer, got '$secs'" >&2; exit 2; }
fi
if [ "$build_only" = 1 ]; then want="${1:-all}"; else want="${2:-fuzz_idx}"; fi
out_root="${FUZZ_BUILD:-$root/build-fuzz}"
cmake_dir="$out_root/cmake"

harnesses=()
if [ "$want" = all ]; then
  for f in "$root"/fuzz/fuzz_*.c; do harnesses+=("$(basename "$f" .c)"); done
else
  [ -f "$root/fuzz/$want.c" ] || { echo "fuzz.sh: no harness $root/fuzz/$want.c" >&2; exit 2; }
  harnesses=("$want")
fi

# clang with the libFuzzer runtime
mkdir -p "$out_root"
probe() {
  printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
    > "$out_root/probe.c"
  clang -fsanitize=fuzzer "$out_root/probe.c" -o "$out_root/probe" 2>/dev/null
}
if ! command -v clang >/dev/null || ! probe; then
  if [ "${FUZZ_NO_INSTALL:-0}" = 1 ]; then
    echo "fuzz.sh: clang with libFuzzer is not installed (FUZZ_NO_INSTALL=1): skipped" >&2
    exit 77
  fi
  echo "fuzz.sh: installing clang and libclang-rt-14-dev"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev
  probe || { echo "fuzz.sh: clang cannot build a libFuzzer program" >&2; exit 1; }
fi

# the instrumented build: configured every time (a harness added since the
# last run is a target only once CMake has globbed fuzz/ again; a configure
# of an existing build takes a second), rebuilt as the sources change
[ -f "$cmake_dir/CMakeCache.txt" ] || echo "fuzz.sh: configuring the libFuzzer build in $cmake_dir"
CC=clang cmake -S "$root" -B "$cmake_dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="-O1" \
  -DTSL_FUZZ=ON -DTSL_BUILD_TESTS=OFF -DTSL_WERROR=OFF >/dev/null
echo "fuzz.sh: building ${harnesses[*]}"
cmake --build "$cmake_dir" -j "${FUZZ_JOBS:-2}" --target "${harnesses[@]}" >"$out_root/build.log" 2>&1 || {
  tail -40 "$out_root/build.log" >&2
  echo "fuzz.sh: the build failed (log: $out_root/build.log)" >&2
  exit 1
}
[ "$build_only" = 1 ] && { echo "fuzz.sh: built ${harnesses[*]} in $cmake_dir"; exit 0; }

status=0
for h in "${harnesses[@]}"; do
  out="$out_root/$h"
  seeds="$root/fuzz/corpus/$h"
  mkdir -p "$out/corpus"
  echo "fuzz.sh: fuzzing $h for $secs s (seeds: $seeds, new inputs: $out/corpus)"
  set +e
  # shellcheck disable=SC2086
  (cd "$out" && "$cmake_dir/$h" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$out/" ${FUZZ_ARGS:-} corpus "$seeds") >"$out/log.txt" 2>&1
  rc=$?
  set -e
  grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)|^stat::|ERROR|SUMMARY|check failed" "$out/log.txt" || true
  grep -E "^#[0-9]+[[:space:]]+DONE|^stat::" "$out/log.txt" > "$out/stats.txt" || true
  if [ "$rc" -ne 0 ]; then
    echo "fuzz.sh: $h FAILED (exit $rc); log: $out/log.txt; inputs that trigger it:" >&2
    ls -1 "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-* 2>/dev/null >&2 || true
    status=$rc
    continue
  fi
  echo "fuzz.sh: $h ran $secs s without a finding; corpus: $(find "$out/corpus" -type f | wc -l) inputs"
done
exit $status
