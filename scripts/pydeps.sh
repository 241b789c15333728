#!/usr/bin/env bash
# Installs the Python packages used only as independent references in tests
# (never by the library). Exit 0 if they are importable afterwards, 1 if not.
set -uo pipefail
PY=${PYTHON:-python3}
if $PY -c "import jax, numpy" 2>/dev/null; then exit 0; fi
$PY -m pip install -q --disable-pip-version-check "jax[cpu]" numpy >/dev/null 2>&1 || \
  $PY -m pip install -q --disable-pip-version-check --break-system-packages "jax[cpu]" numpy >/dev/null 2>&1
$PY -c "import jax, numpy" 2>/dev/null
