#!/usr/bin/env bash
# scripts/fuzz.sh builds every libFuzzer harness of fuzz/ (clang, TSL_FUZZ=ON,
# each linked with the libraries of its "fuzz-link:" line) and runs each for
# 2 s without a finding. Skipped (77) where clang's libFuzzer is not
# installed: the test installs nothing. The replay tests (fuzz_*_replay)
# check the same link lines with the suite's compiler everywhere.
set -uo pipefail
src=${TSL_SOURCE_DIR:?TSL_SOURCE_DIR not set}
build=${TSL_BUILD_DIR:?TSL_BUILD_DIR not set}
FUZZ_NO_INSTALL=1 FUZZ_BUILD="$build/fuzz" FUZZ_JOBS=1 bash "$src/scripts/fuzz.sh" 2 all
