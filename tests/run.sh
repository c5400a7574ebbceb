#!/usr/bin/env bash
# The test command: installs what the suite needs (pip packages; Debian's chromium for the browser test) and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -r requirements-test.txt
if [ ! -x /usr/bin/chromium ]; then
  SUDO=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi
python -m pytest "$@"
