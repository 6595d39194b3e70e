#!/usr/bin/env bash
# Make sure a headless Chromium is on PATH for the browser test and the screenshots: Debian's `chromium`,
# installed with apt-get when missing (as root, or through sudo). Prints the browser's path.
set -euo pipefail

found() { command -v chromium || command -v chromium-browser || command -v google-chrome || true; }
browser="$(found)"
if [[ -z "$browser" ]]; then
    if ! command -v apt-get >/dev/null; then
        echo "no chromium, and no apt-get to install it: install Chromium and put it on PATH" >&2; exit 1
    fi
    sudo=""
    [[ "$(id -u)" == 0 ]] || sudo="sudo"
    echo ">> installing Debian's chromium (apt-get)" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium >/dev/null
    browser="$(found)"
fi
[[ -n "$browser" ]] || { echo "chromium is still missing after apt-get install" >&2; exit 1; }
echo "$browser"
