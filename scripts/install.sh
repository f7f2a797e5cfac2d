#!/usr/bin/env bash
# A CPU-only install of Memory OS into a virtualenv, on any machine: torch from PyTorch's CPU wheel index
# first (an unpinned or PyPI torch on Linux is the CUDA build, several GB more), then the project.
#
#   scripts/install.sh [VENV] [EXTRA]     e.g. scripts/install.sh .venv test   (default: .venv, no extra)
#
# Environment: PYTHON (default python3), TORCH_VERSION (2.13.0), TORCH_INDEX (PyTorch's CPU index). A torch
# already in the virtualenv that is this version's CPU build is kept. `make install` / `make demo` run this.
set -euo pipefail

PYTHON=${PYTHON:-python3}
VENV=${1:-.venv}
EXTRA=${2:-}
TORCH_VERSION=${TORCH_VERSION:-2.13.0}
TORCH_INDEX=${TORCH_INDEX:-https://download.pytorch.org/whl/cpu}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
started=$(date +%s)

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
"$VENV/bin/pip" install --quiet --upgrade pip

cpu_torch() {
    "$VENV/bin/python" - "$TORCH_VERSION" <<'PY' 2>/dev/null
import sys
import torch
sys.exit(0 if torch.__version__.split("+")[0] == sys.argv[1] and torch.version.cuda is None else 1)
PY
}

cpu_wheel() {  # the torch installed is this version's CPU wheel, by its metadata (its dependencies may not be yet)
    "$VENV/bin/python" - "$TORCH_VERSION" <<'PY' 2>/dev/null
import importlib.metadata, sys
sys.exit(0 if importlib.metadata.version("torch") == sys.argv[1] + "+cpu" else 1)
PY
}

reachable() {  # the index's host resolves (a machine without network says so at once, not after retries)
    "$VENV/bin/python" - "$1" <<'PY' 2>/dev/null
import socket, sys, urllib.parse
url = urllib.parse.urlparse(sys.argv[1])
if url.scheme == "file":
    sys.exit(0)
socket.getaddrinfo(url.hostname, url.port or 443)
PY
}

if ! cpu_torch; then
    # a CPU wheel among pip's local sources (its find-links: an offline machine, a wheel folder) is used as
    # it is, without asking PyTorch's index
    if "$VENV/bin/pip" install --quiet --no-index --no-deps "torch==$TORCH_VERSION" >/dev/null 2>&1 && cpu_wheel; then
        echo "install: torch $TORCH_VERSION: using the local CPU wheel (pip's find-links)" >&2
    elif reachable "$TORCH_INDEX"; then
        echo "install: torch $TORCH_VERSION: the CPU build from $TORCH_INDEX" >&2
        "$VENV/bin/pip" install --quiet --retries 1 --timeout 30 --no-deps --force-reinstall \
            "torch==$TORCH_VERSION" --index-url "$TORCH_INDEX"
    else
        echo "install: cannot reach $TORCH_INDEX and pip has no local torch $TORCH_VERSION CPU wheel:" \
            "put torch-$TORCH_VERSION+cpu-*.whl in a folder pip's find-links names, or set TORCH_INDEX to a mirror" >&2
        exit 1
    fi
    "$VENV/bin/pip" install --quiet "torch==$TORCH_VERSION"  # its dependencies; the CPU build stays
fi
cpu_torch || { echo "install: torch $TORCH_VERSION is not the CPU build; refusing to go on" >&2; exit 1; }

if [ -n "$EXTRA" ]; then
    "$VENV/bin/pip" install --quiet -e "$ROOT[$EXTRA]"
else
    "$VENV/bin/pip" install --quiet -e "$ROOT"
fi
echo "installed into $VENV in $(( $(date +%s) - started ))s ($(du -sh "$VENV" | cut -f1))" >&2
