#!/usr/bin/env bash
# Make sure bubblewrap (`bwrap`) is on PATH: the grader runs each submission in a bwrap sandbox
# (kit/sandbox.py). Debian's `bubblewrap`, installed with apt-get when missing (as root, or through sudo).
# Prints bwrap's path. A non-root instructor also needs unprivileged user namespaces (on by default in
# Debian 11+ and Ubuntu; `sysctl kernel.unprivileged_userns_clone=1` where they are off).
# The sandbox's seccomp filter is compiled by the system's python3 with libseccomp's own bindings
# (Debian's `python3-seccomp`, scripts/seccomp_filter.py): installed here too when missing.
set -euo pipefail
here="$(dirname "$0")"
if ! /usr/bin/python3 -c "import seccomp" 2>/dev/null; then
    sudo=""
    [[ "$(id -u)" == 0 ]] || sudo="sudo"
    echo ">> installing Debian's python3-seccomp (apt-get)" >&2
    { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-seccomp; } >/dev/null \
        || true
    /usr/bin/python3 -c "import seccomp" || { echo "python3-seccomp is missing: apt-get install python3-seccomp" >&2; exit 1; }
fi
exec "$here/apt_ensure.sh" bubblewrap bwrap
