#!/usr/bin/env bash
# The test command: installs what the suite needs (pip packages; Debian's chromium for the browser test and the
# CJK font of packages.txt for Chinese pictures) and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -r requirements-test.txt
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
while read -r package; do   # packages.txt: what a Hugging Face Space installs with apt (fonts-noto-cjk)
  [ -z "$package" ] || dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done < packages.txt
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
python -m pytest "$@"
