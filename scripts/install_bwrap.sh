#!/usr/bin/env bash
# Make sure bubblewrap (`bwrap`) is on PATH: the grader runs each submission in a bwrap sandbox
# (kit/sandbox.py). Debian's `bubblewrap`, installed with apt-get when missing (as root, or through sudo).
# Prints bwrap's path. A non-root instructor also needs unprivileged user namespaces (on by default in
# Debian 11+ and Ubuntu; `sysctl kernel.unprivileged_userns_clone=1` where they are off).
set -euo pipefail

found() { command -v bwrap || true; }
bwrap="$(found)"
if [[ -z "$bwrap" ]]; then
    if ! command -v apt-get >/dev/null; then
        echo "no bwrap, and no apt-get to install it: install bubblewrap and put it on PATH" >&2; exit 1
    fi
    sudo=""
    [[ "$(id -u)" == 0 ]] || sudo="sudo"
    echo ">> installing Debian's bubblewrap (apt-get)" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq bubblewrap >/dev/null
    bwrap="$(found)"
fi
[[ -n "$bwrap" ]] || { echo "bwrap is still missing after apt-get install" >&2; exit 1; }
echo "$bwrap"
