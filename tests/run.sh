#!/usr/bin/env bash
# The test command: installs what the suite needs (pip packages; Debian's chromium for the browser test, the CJK
# font of packages.txt for Chinese pictures, and the libGL and GLib that quantus's OpenCV loads) and runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q -r requirements-test.txt
missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
# quantus imports cv2 (opencv-python), whose bundled Qt loads the system's libGL.so.1 and libglib-2.0.so.0
libraries=$(/sbin/ldconfig -p)
grep -q 'libGL\.so\.1 ' <<<"$libraries" || missing+=(libgl1)
grep -q 'libglib-2\.0\.so\.0 ' <<<"$libraries" || missing+=(libglib2.0-0)
while read -r package; do   # packages.txt: what a Hugging Face Space installs with apt (fonts-noto-cjk)
  [ -z "$package" ] || dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done < packages.txt
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=$([ "$(id -u)" = 0 ] && echo "" || echo sudo)
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
python -m pytest "$@"
