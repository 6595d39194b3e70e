#!/usr/bin/env bash
# Make sure a headless Chromium is on PATH for the browser test and the screenshots: Debian's `chromium`,
# installed with apt-get when missing (as root, or through sudo). Prints the browser's path.
exec "$(dirname "$0")/apt_ensure.sh" chromium chromium chromium-browser google-chrome
