#!/usr/bin/env bash
# A bounded libFuzzer run of the wire protocol's harness (fuzz/fuzz_proto.c,
# docs/PROTOCOL.md): scripts/fuzz.sh builds it with clang (libFuzzer, ASan,
# UBSan) and fuzzes the incremental reader, the header checks, the payload
# parser, the per-type validator and the conversation for 30 s from the
# seed corpus fuzz/corpus/fuzz_proto. A crash, a leak, a sanitizer report or
# a failed check of the harness fails the test; the input that caused it is
# kept under $TSL_BUILD_DIR/fuzz/fuzz_proto/. The run's last lines
# (executions, coverage, corpus) are printed. Skipped (77) where clang's
# libFuzzer is not installed: the test installs nothing.
# FUZZ_PROTO_SECONDS=N runs N seconds instead.
set -uo pipefail
src=${TSL_SOURCE_DIR:?TSL_SOURCE_DIR not set}
build=${TSL_BUILD_DIR:?TSL_BUILD_DIR not set}
secs=${FUZZ_PROTO_SECONDS:-30}
FUZZ_NO_INSTALL=1 FUZZ_BUILD="$build/fuzz" FUZZ_JOBS=1 bash "$src/scripts/fuzz.sh" "$secs" fuzz_proto
rc=$?
[ "$rc" -eq 0 ] || exit "$rc"
stats="$build/fuzz/fuzz_proto/stats.txt"
if ! grep -qE "^#[0-9]+[[:space:]]+DONE" "$stats" 2>/dev/null; then
  echo "test_fuzz_proto: libFuzzer gave no final statistics ($stats)" >&2
  exit 1
fi
echo "test_fuzz_proto: $(grep -E '^#[0-9]+[[:space:]]+DONE' "$stats")"
