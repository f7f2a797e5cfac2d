#!/usr/bin/env bash
# Debian's chromium for the explorer's browser tests (Playwright drives it: Playwright's own browser download
# cannot work here). A no-op when installed (apt only checks); prints the browser's version. Exits non-zero
# when no browser can be had: the `browser`-marked tests then skip, saying so.
set -euo pipefail
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }
as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >&2 \
    || { as_root apt-get update -q >&2 && as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium >&2; }
/usr/bin/chromium --version
