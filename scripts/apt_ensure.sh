#!/usr/bin/env bash
# Usage: apt_ensure.sh PACKAGE COMMAND [COMMAND...]
# Print the path of the first COMMAND on PATH; when none is there, install Debian's PACKAGE with apt-get
# (as root, or through sudo) and look again. Exits 1, saying why, when it cannot.
set -euo pipefail

package="$1"; shift
found() { for name in "$@"; do command -v "$name" && return; done; true; }
path="$(found "$@")"
if [[ -z "$path" ]]; then
    if ! command -v apt-get >/dev/null; then
        echo "no $1, and no apt-get to install it: install $package and put it on PATH" >&2; exit 1
    fi
    sudo=""
    [[ "$(id -u)" == 0 ]] || sudo="sudo"
    echo ">> installing Debian's $package (apt-get)" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$package" >/dev/null
    path="$(found "$@")"
fi
[[ -n "$path" ]] || { echo "$1 is still missing after apt-get install $package" >&2; exit 1; }
echo "$path"
