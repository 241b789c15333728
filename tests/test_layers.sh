#!/usr/bin/env bash
# The layers (docs/ARCHITECTURE.md): every #include of src/ and
# include/tensile/ follows the table, and the table agrees with
# CMakeLists.txt. Then the checker is shown to catch what it must: an
# upward include, an include of the umbrella header, a table that disagrees
# with the build.
set -uo pipefail
src=${TSL_SOURCE_DIR:?}
check="$src/tests/layers/check_layers.py"
fail=0
python3 "$check" "$src" || fail=1

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkroot() { # a minimal tree with the real tables and one source file
  rm -rf "$tmp/r"; mkdir -p "$tmp/r/docs" "$tmp/r/src/$1" "$tmp/r/include/tensile"
  cp "$src/docs/ARCHITECTURE.md" "$tmp/r/docs/"; cp "$src/CMakeLists.txt" "$tmp/r/"
  printf '%s\n' "$3" > "$tmp/r/src/$1/$2"
}
expect_violation() { # what, pattern the report must contain
  out=$(python3 "$check" "$tmp/r" 2>&1); rc=$?
  if [ $rc -ne 1 ] || ! grep -q -- "$2" <<<"$out"; then
    echo "FAIL: the checker missed $1 (exit $rc): $out"; fail=1
  else
    echo "ok: the checker reports $1"
  fi
}
mkroot core up.c '#include "sched/plan_order.h"'
expect_violation "core including sched" "layer 'core' may not use layer 'sched'"
mkroot sched up.c '#include "tensile/backend.h"'
expect_violation "sched including the backend's public header" "layer 'sched' may not use layer 'backend'"
mkroot runtime umb.c '#include "tensile/sched.h"'
expect_violation "src/ including the umbrella header" "umbrella"
mkroot core ok.c '#include "tensile/status.h"'
sed -i 's/^set(TSL_DEPS_sched \(.*\))/set(TSL_DEPS_sched \1 backend)/' "$tmp/r/CMakeLists.txt"
expect_violation "a build that disagrees with the table" "TSL_DEPS_sched"
exit $fail
