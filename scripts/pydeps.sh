#!/usr/bin/env bash
# Installs the Python packages used only as independent references in tests
# (never by the library):
#   jax    JAX and numpy from the pip index, for $PYTHON (default python3),
#          used by tests/test_reference_jax.sh
#   torch  Debian's python3-torch and python3-torchvision (numpy with them),
#          for $TORCH_PYTHON (default /usr/bin/python3, the interpreter
#          Debian's packages are built for), used by
#          tests/test_reference_torch.sh
#   matplotlib  matplotlib from the pip index, for $PYTHON, used by
#          bench/paper_figures.py (the figures of `tensile bench paper`)
#
#   pydeps.sh [jax|torch|matplotlib|all]      (default: all)
#
# Exit 0 if everything asked for is importable afterwards, 1 if not, with a
# line on stderr saying why. Nothing is downloaded when the packages are
# already importable. Otherwise the package index is probed first with a
# short timeout (PYDEPS_PROBE_TIMEOUT seconds, default 5), so that without a
# network this fails in seconds instead of waiting on pip's or apt's
# retries: for pip, $PIP_INDEX_URL, else the index-url of pip's
# configuration, else https://pypi.org/simple/ (when it cannot be reached
# and pip has find-links configured, pip runs offline on those alone); for
# apt, the first http(s) source in /etc/apt/sources.list{,.d}, through apt's
# http proxy if one is configured. apt-get runs as root, or through sudo
# when that needs no password (as scripts/deps.sh).
set -uo pipefail
PY=${PYTHON:-python3}
TORCH_PY=${TORCH_PYTHON:-/usr/bin/python3}
T=${PYDEPS_PROBE_TIMEOUT:-5}
what=${1:-all}

say() { echo "pydeps: $*" >&2; }

# probe URL [PROXY]: 0 if the server at URL answers within $T seconds with a
# status that means it serves that page (2xx, 3xx; 401, 403 or 405 when it
# wants credentials or refuses HEAD); a timeout, a refused connection, 404
# or a server error count as unreachable. Only the headers are asked for
# (HEAD), never the page.
probe() {
  local url=$1 proxy=${2:-} code
  if command -v curl >/dev/null 2>&1; then
    code=$(curl -sS -I -o /dev/null -w '%{http_code}' --connect-timeout "$T" --max-time "$T" \
                ${proxy:+-x "$proxy"} "$url" 2>/dev/null)
  else
    code=$("$PY" - "$url" "$T" "$proxy" 2>/dev/null <<'EOF'
import sys, urllib.request, urllib.error
url, t, proxy = sys.argv[1], float(sys.argv[2]), sys.argv[3]
h = [urllib.request.ProxyHandler({"http": proxy, "https": proxy})] if proxy else []
try:
    r = urllib.request.build_opener(*h).open(urllib.request.Request(url, method="HEAD"), timeout=t)
    print(r.status)
except urllib.error.HTTPError as e:
    print(e.code)
except Exception:
    print("000")
EOF
)
  fi
  case $code in 2??|3??|401|403|405) return 0 ;; *) return 1 ;; esac
}

# pip's index: $PIP_INDEX_URL, else index-url from pip's configuration.
pip_index() {
  local idx=${PIP_INDEX_URL:-}
  [ -z "$idx" ] && idx=$("$PY" -m pip config list 2>/dev/null |
                          sed -n "s/^[^ ]*\.index-url='\(.*\)'\$/\1/p" | head -n1)
  echo "${idx:-https://pypi.org/simple/}"
}

# pip_install MODULES PROJECT PKG...: installs the packages for $PY unless
# `import MODULES` works; the index is probed at PROJECT's page first.
pip_install() {
  local mod=$1 project=$2; shift 2
  if "$PY" -c "import $mod" 2>/dev/null; then return 0; fi
  if ! "$PY" -m pip --version >/dev/null 2>&1; then
    say "$PY has no pip; $* not installed"; return 1
  fi
  local idx offline=()
  idx=$(pip_index)
  if ! probe "${idx%/}/$project/"; then
    if [ -n "${PIP_FIND_LINKS:-}" ] || "$PY" -m pip config list 2>/dev/null | grep -q "find-links='[^']"; then
      say "pip index $idx cannot be reached (${T} s); trying pip's find-links alone"
      offline=(--no-index)
    else
      say "pip index $idx cannot be reached (${T} s); $* not installed"; return 1
    fi
  fi
  local opts=(-q --disable-pip-version-check --timeout 20 --retries 1 "${offline[@]}")
  "$PY" -m pip install "${opts[@]}" "$@" >/dev/null 2>&1 ||
    "$PY" -m pip install "${opts[@]}" --break-system-packages "$@" >/dev/null 2>&1
  "$PY" -c "import $mod" 2>/dev/null || { say "pip could not install $* for $PY"; return 1; }
}

install_jax() { pip_install "jax, numpy" jax "jax[cpu]" numpy; }

# The first http(s) URI of the apt sources (one-line and deb822 formats).
apt_source() {
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
      2>/dev/null | grep -v '^[[:space:]]*#' | grep -oE 'https?://[^[:space:]]+' | head -n1
}

install_torch() {
  local imp="import torch, torchvision, numpy"
  if [ -x "$TORCH_PY" ] && "$TORCH_PY" -c "$imp" 2>/dev/null; then return 0; fi
  if ! command -v apt-get >/dev/null 2>&1; then
    say "no apt-get: python3-torch and python3-torchvision are Debian packages; not installed"
    return 1
  fi
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo=(sudo -n)
    else say "not root and no password-less sudo; python3-torch not installed"; return 1; fi
  fi
  local src proxy=""
  src=$(apt_source)
  eval "$(apt-config shell proxy Acquire::http::Proxy 2>/dev/null)"
  if [ -z "$src" ] || ! probe "${src%/}/" "$proxy"; then
    say "apt source ${src:-(none)} cannot be reached (${T} s); python3-torch not installed"
    return 1
  fi
  local aopts=(-o Acquire::http::Timeout=20 -o Acquire::https::Timeout=20 -o Acquire::Retries=1)
  "${sudo[@]}" apt-get "${aopts[@]}" update -qq >/dev/null 2>&1
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get "${aopts[@]}" install -y -qq \
    --no-install-recommends python3-torch python3-torchvision python3-numpy >/dev/null 2>&1
  "$TORCH_PY" -c "$imp" 2>/dev/null ||
    { say "apt-get could not install python3-torch python3-torchvision for $TORCH_PY"; return 1; }
}

case $what in
  jax) install_jax ;;
  torch) install_torch ;;
  matplotlib) pip_install matplotlib matplotlib matplotlib ;;
  all) rc=0; install_jax || rc=1; install_torch || rc=1; pip_install matplotlib matplotlib matplotlib || rc=1
       exit $rc ;;
  *) say "unknown package set '$what' (jax, torch, matplotlib or all)"; exit 2 ;;
esac
