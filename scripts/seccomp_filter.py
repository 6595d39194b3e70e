"""Write the grader's seccomp filter (BPF) for bubblewrap's --seccomp: `python3 scripts/seccomp_filter.py OUT`.

Run by the system's python3 (Debian's `python3-seccomp`, libseccomp's own bindings, lives in its
dist-packages, which the project's venv does not see); kit/sandbox.py runs it once and keeps the blob.
Every system call is allowed but those a notebook never needs, which fail with EPERM: mounting,
tracing, loading kernels or modules, BPF, the kernel keyring, new namespaces (unshare, setns, and
clone with a namespace flag; clone3, whose flags a filter cannot read, fails with ENOSYS, so the C
library falls back to clone).
"""

from __future__ import annotations

import errno
import sys

import seccomp

DENIED = ("mount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount",
          "fspick", "mount_setattr", "ptrace", "process_vm_readv", "process_vm_writev", "kexec_load",
          "kexec_file_load", "bpf", "keyctl", "add_key", "request_key", "unshare", "setns", "init_module",
          "finit_module", "delete_module", "reboot", "swapon", "swapoff", "acct", "quotactl", "perf_event_open",
          "userfaultfd", "open_by_handle_at", "name_to_handle_at", "settimeofday", "clock_settime", "adjtimex",
          "iopl", "ioperm", "lookup_dcookie", "syslog", "vhangup", "personality")
#: CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET, NEWTIME
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000, 0x00000080)


def build() -> seccomp.SyscallFilter:
    """The filter: allow by default, deny the calls above."""
    rules = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in DENIED:
        try:
            rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
        except (RuntimeError, ValueError):  # a call this kernel or architecture does not have
            continue
    for flag in NAMESPACE_FLAGS:
        rules.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    return rules


def main(argv: list[str]) -> int:
    [out] = argv
    with open(out, "wb") as handle:  # noqa: PTH123 - the system python, kept plain
        build().export_bpf(handle)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
