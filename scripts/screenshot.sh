#!/usr/bin/env bash
# Full-page screenshots of the built book in headless Chromium at 1280 px wide, after MathJax has typeset.
# Output: book/_build/screenshots/<page>.png (chapters without the notebooks/ prefix). Installs Debian's
# chromium if missing.
# Usage: scripts/screenshot.sh [page.html ...]   (paths relative to book/_build/html; default: every page)
set -euo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
[[ -f "$root/book/_build/html/intro.html" ]] || { echo "build the book first: make book" >&2; exit 1; }
CHROMIUM="$("$root/scripts/install_chromium.sh")"
export CHROMIUM
python="${PYTHON:-$root/.venv/bin/python}"
[[ -x "$python" ]] || python="$(command -v python3)"
exec "$python" "$root/scripts/book_browser.py" screenshots "$@"
