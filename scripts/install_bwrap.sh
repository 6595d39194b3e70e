#!/usr/bin/env bash
# Make sure bubblewrap (`bwrap`) is on PATH: the grader runs each submission in a bwrap sandbox
# (kit/sandbox.py). Debian's `bubblewrap`, installed with apt-get when missing (as root, or through sudo).
# Prints bwrap's path. A non-root instructor also needs unprivileged user namespaces (on by default in
# Debian 11+ and Ubuntu; `sysctl kernel.unprivileged_userns_clone=1` where they are off).
exec "$(dirname "$0")/apt_ensure.sh" bubblewrap bwrap
