#!/usr/bin/env bash
# Fuzzes one libFuzzer harness of fuzz/ for a while.
#
#   scripts/fuzz.sh [SECONDS] [HARNESS]      defaults: 60 s, fuzz_idx
#
# Builds fuzz/HARNESS.c with clang -fsanitize=fuzzer,address,undefined
# together with the sources listed on its "fuzz-sources:" comment line and
# the libraries on its "fuzz-libs:" line (paths relative to the repository
# root), then runs it for SECONDS over the seed corpus fuzz/corpus/HARNESS.
# New inputs go to build-fuzz/HARNESS/corpus (the seed folder is only read);
# a crash, leak or sanitizer report stops the run, is saved under
# build-fuzz/HARNESS/ (crash-*, leak-*, timeout-*, oom-*) and makes the
# script exit non-zero. Replay one input: build-fuzz/HARNESS/HARNESS FILE.
# Minimise it and add it to fuzz/corpus/HARNESS once the bug is fixed.
# Extra libFuzzer options: FUZZ_ARGS="-max_len=65536 -jobs=2" scripts/fuzz.sh
# Installs clang and libclang-rt-14-dev with apt-get if they are missing.
set -euo pipefail

secs="${1:-60}"
harness="${2:-fuzz_idx}"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
src="$root/fuzz/$harness.c"
seeds="$root/fuzz/corpus/$harness"
out="$root/build-fuzz/$harness"

[[ "$secs" =~ ^[0-9]+$ && "$secs" -gt 0 ]] || { echo "fuzz.sh: SECONDS must be a positive integer, got '$secs'" >&2; exit 2; }
[ -f "$src" ] || { echo "fuzz.sh: no harness $src" >&2; exit 2; }

# clang with the libFuzzer runtime
probe() {
  printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' \
    > "$out/probe.c"
  clang -fsanitize=fuzzer "$out/probe.c" -o "$out/probe" 2>/dev/null
}
mkdir -p "$out/corpus"
if ! command -v clang >/dev/null || ! probe; then
  echo "fuzz.sh: installing clang and libclang-rt-14-dev"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev
  probe || { echo "fuzz.sh: clang cannot build a libFuzzer program" >&2; exit 1; }
fi

# sources and libraries named by the harness
sources=$(sed -n 's/^[ *]*fuzz-sources:\(.*\)$/\1/p' "$src" | head -1)
libs=$(sed -n 's/^[ *]*fuzz-libs:\(.*\)$/\1/p' "$src" | head -1)
if [ -z "$sources" ]; then
  echo "fuzz.sh: $src has no 'fuzz-sources:' line naming the library files it needs" >&2
  exit 2
fi
srcs=()
for s in $sources; do srcs+=("$root/$s"); done

echo "fuzz.sh: building $harness ($sources $libs)"
# shellcheck disable=SC2086
clang -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
  -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
  -I"$root/include" -I"$root/src" "$src" "${srcs[@]}" $libs -o "$out/$harness"

echo "fuzz.sh: fuzzing $harness for $secs s (seeds: $seeds, new inputs: $out/corpus)"
set +e
# shellcheck disable=SC2086
(cd "$out" && ./"$harness" -max_total_time="$secs" -rss_limit_mb=2048 -timeout=10 \
  -print_final_stats=1 -artifact_prefix="$out/" ${FUZZ_ARGS:-} corpus "$seeds")
rc=$?
set -e
if [ $rc -ne 0 ]; then
  echo "fuzz.sh: $harness FAILED (exit $rc); inputs that trigger it:" >&2
  ls -1 "$out"/crash-* "$out"/leak-* "$out"/timeout-* "$out"/oom-* 2>/dev/null >&2 || true
  exit $rc
fi
echo "fuzz.sh: $harness ran $secs s without a finding; corpus: $(find "$out/corpus" -type f | wc -l) inputs"
