#!/usr/bin/env bash
# Headless Chromium screenshots of the built book: the landing page and chapter 1.
# Output: book/_build/screenshots/{intro,01-corpus}.png. Installs Debian's chromium if missing.
# Usage: [HEIGHT=2000] scripts/screenshot.sh [page.html ...]   (paths relative to book/_build/html;
#        a larger HEIGHT captures more of a long page: the window is 1280 x HEIGHT pixels)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
html="$root/book/_build/html"
out="$root/book/_build/screenshots"
[[ -f "$html/intro.html" ]] || { echo "build the book first: make book" >&2; exit 1; }

browser="$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)"
if [[ -z "$browser" ]]; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
        browser="$(command -v chromium)"
    else
        echo "chromium is not installed (apt-get install chromium)" >&2; exit 1
    fi
fi

pages=("$@")
[[ ${#pages[@]} -gt 0 ]] || pages=(intro.html notebooks/01-corpus.html)
mkdir -p "$out"
profile="$(mktemp -d)"
trap 'rm -rf "$profile"' EXIT

for page in "${pages[@]}"; do
    name="$(basename "$page" .html)"
    # --virtual-time-budget lets MathJax typeset before the capture.
    "$browser" --headless --no-sandbox --disable-gpu --disable-background-networking \
        --disable-component-update --disable-sync --no-first-run --hide-scrollbars \
        --user-data-dir="$profile" --virtual-time-budget=10000 --window-size=1280,"${HEIGHT:-2000}" \
        --screenshot="$out/$name.png" "file://$html/$page" 2>/dev/null
    echo "$out/$name.png"
done
