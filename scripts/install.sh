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

if ! cpu_torch; then
    # the CPU index holds torch's own dependencies too; the machine's pip configuration (find-links, mirrors)
    # still applies, so an offline machine with a local CPU wheel installs that one
    "$VENV/bin/pip" install --quiet --retries 1 --timeout 30 --no-deps "torch==$TORCH_VERSION" --index-url "$TORCH_INDEX"
    "$VENV/bin/pip" install --quiet "torch==$TORCH_VERSION"  # its dependencies; the CPU build stays
fi
cpu_torch || { echo "install: torch $TORCH_VERSION is not the CPU build; refusing to go on" >&2; exit 1; }

if [ -n "$EXTRA" ]; then
    "$VENV/bin/pip" install --quiet -e "$ROOT[$EXTRA]"
else
    "$VENV/bin/pip" install --quiet -e "$ROOT"
fi
echo "installed into $VENV in $(( $(date +%s) - started ))s ($(du -sh "$VENV" | cut -f1))" >&2
