"""The attack suite again, as a user who is not root (issues 43 and 44): each row passes in both modes.

`make test` runs as root on CI, where the interpreter lives under /root (mode 0700) and no other user can
reach it. As root, this file re-runs the attack rows as `nobody` in a mount namespace of their own: bwrap
(as root, so it reads every bind's source in the real root) mounts an empty 0755 tmpfs on each folder other
users cannot enter and binds back into it, at the same path, only what the run needs (the interpreter, the
venv, the checkout, the data). No permission on the machine changes and every path stays the same. setpriv
then drops to nobody, and the grader makes its sandboxes as any instructor without root would: unprivileged
user namespaces, no cgroup, the memory watch, RLIMIT_NPROC. A row skipped as nobody must be one this file
names, with its reason; every other skip, failure or error fails the row here.
"""

from __future__ import annotations

import atexit
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kit import sandbox  # noqa: E402
from tests import test_kit_attacks, test_kit_checks_attacks  # noqa: E402


def _rows_of(module) -> list[str]:
    return [f"tests/{Path(module.__file__).name}::{name}" for name in sorted(vars(module))
            if name.startswith("test_") and callable(getattr(module, name))]


#: Per category of issue 44 (and the walls of issue 43), the rows run again as nobody.
ROWS = [
    *_rows_of(test_kit_attacks),  # walls, leftovers, links, processes, classmates, one notebook one row, codec
    *_rows_of(test_kit_checks_attacks),  # marks without solving
    "tests/test_kit.py::test_the_checker_kernel_is_stopped_past_its_memory_limit_and_starts_afresh",
    "tests/test_kit_fairness.py::test_an_exception_from_a_students_function_shows_its_type_only",  # no hidden input
    "tests/test_kit_fairness.py::test_an_overflowing_integer_does_not_quote_the_expected_value",  # no expected value
    "tests/test_query_index.py::test_query_and_index_print_names_escaped_so_a_name_cannot_fake_a_result_line",
    "tests/test_eval_permissions.py::test_an_unknown_user_is_named_alone",  # the command line
]
#: Skips that are right for a user who is not root (test id -> what its message says, and why).
EXPECTED_SKIPS = {
    # a user cannot make cgroup v1 groups: the watch is that user's wall, tested by the [watch] row beside it
    "test_twenty_processes_of_a_gigabyte_stay_within_the_sandbox_memory[cgroup]": "no cgroup can be made here",
}
SUITE_SECONDS = 1500


def _blocked(path: Path) -> Path | None:
    """The highest folder at or above `path` that users other than its owner cannot enter, or None."""
    for folder in [*reversed(path.parents), path]:
        if folder.is_dir() and not folder.stat().st_mode & 0o001:
            return folder
    return None


def _needed() -> list[Path]:
    """What the run reads: the interpreter, the venv, the checkout, the package, the data it links to."""
    paths = {ROOT, Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parents[1],
             *sandbox._read_only_paths()}
    paths |= {Path(p) for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).is_dir()}
    paths = {p.resolve() for p in paths}
    return sorted(p for p in paths if not any(q in p.parents for q in paths))


def namespace_args() -> list[str]:
    """bwrap's arguments (after `bwrap`): the real root, with each folder nobody cannot enter made a 0755
    tmpfs holding only what the run needs, bound back at the same path; ValueError when a needed folder is
    itself closed to other users (binding it back would not open it)."""
    args, covers, binds = ["--dev-bind", "/", "/", "--die-with-parent"], set(), []
    for path in _needed():
        blocked = _blocked(path)
        if blocked == path:
            raise ValueError(f"{path} is closed to other users (mode {path.stat().st_mode & 0o777:o})")
        if blocked is not None:
            covers.add(blocked)
            binds.append(path)
    between = {folder for path in binds for folder in path.parents if any(c in folder.parents for c in covers)}
    for cover in sorted(covers):
        args += ["--perms", "0755", "--tmpfs", str(cover)]
    for folder in sorted(between, key=lambda f: len(f.parts)):  # bwrap would make them 0700
        args += ["--perms", "0755", "--dir", str(folder)]
    for path in binds:
        args += ["--bind", str(path), str(path)]
    return args


def as_nobody(command: list[str], home: Path) -> list[str]:
    """`command` run as nobody (real and effective uid and gid, no supplementary groups) in that namespace."""
    user = pwd.getpwnam(sandbox.NOBODY)
    env = ["env", "-u", "KIT_CACHE", f"HOME={home}", f"USER={user.pw_name}", f"LOGNAME={user.pw_name}"]
    return [shutil.which("bwrap"), *namespace_args(), "--", "setpriv", f"--reuid={user.pw_uid}",
            f"--regid={user.pw_gid}", "--clear-groups", "--", *env, *command]


def _cannot(why: str):
    """Where the re-run cannot happen: on CI (CI=true, the layout it exists for) a failure, elsewhere a skip."""
    if os.environ.get("CI"):
        pytest.fail(f"the attack suite could not run as a non-root user: {why}")
    pytest.skip(f"the attack suite could not run as a non-root user: {why}")


def _problem() -> str | None:
    """Why the rows cannot run as nobody on this machine, or None."""
    missing = [tool for tool in ("bwrap", "setpriv") if shutil.which(tool) is None]
    try:
        pwd.getpwnam(sandbox.NOBODY)
        namespace_args()
    except (KeyError, ValueError) as err:
        return str(err)
    return f"{', '.join(missing)} not installed" if missing else None


#: The run as nobody once started (by tests/conftest.py, beside the other tests, when this file is selected).
STARTED: dict = {}


def start() -> dict:
    """Start the rows as nobody in the background: {"proc", "base", "who"}; the fixture below waits for it."""
    if not STARTED and os.geteuid() == 0 and _problem() is None:
        user = pwd.getpwnam(sandbox.NOBODY)
        base = Path(tempfile.mkdtemp(prefix="ragcourse-as-user-"))
        os.chown(base, user.pw_uid, user.pw_gid)
        who = subprocess.run(as_nobody([sys.executable, "-c", "import os, sys; print(os.getuid(), sys.executable)"],
                                       base / "home"), capture_output=True, text=True, timeout=60)
        cmd = as_nobody([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rs", "--durations=5",
                         f"--basetemp={base / 'tmp'}", f"--junitxml={base / 'rows.xml'}", *ROWS], base / "home")
        with (base / "log").open("w") as log:
            proc = subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        STARTED.update(proc=proc, base=base, who=who.stdout.split(), started=time.monotonic())
        atexit.register(_stop, STARTED)  # a run that stops early (-x, Ctrl-C) leaves no process and no folder
    return STARTED


def _stop(run: dict) -> None:
    if run["proc"].poll() is None:
        run["proc"].kill()
        run["proc"].wait()
    shutil.rmtree(run["base"], ignore_errors=True)


@pytest.fixture(scope="module")
def as_user():
    """The rows run once as nobody: {(module, test id): (outcome, message)}, who ran them, and the log."""
    if os.geteuid() != 0:
        pytest.skip(f"this run is already a non-root user's (uid {os.geteuid()}): the attack rows ran as that user")
    if _problem() is not None:
        _cannot(_problem())
    run = start()
    try:
        run["proc"].wait(timeout=max(1, SUITE_SECONDS - (time.monotonic() - run["started"])))
    except subprocess.TimeoutExpired:
        pass
    try:
        return _results(run)
    finally:
        _stop(run)


def _results(run: dict) -> dict:
    log = (run["base"] / "log").read_text(errors="replace")[-3000:]
    report = run["base"] / "rows.xml"
    if not report.is_file():
        status = run["proc"].poll()
        why = f"exit {status}" if status is not None else f"still running after {SUITE_SECONDS} s"
        pytest.fail(f"the run as nobody wrote no report ({why}): {log}")
    rows = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        outcome = next((c for c in case if c.tag in ("failure", "error", "skipped")), None)
        message = "" if outcome is None else (outcome.get("message") or "") + (outcome.text or "")[-3000:]
        rows[(case.get("classname"), case.get("name"))] = ("passed" if outcome is None else outcome.tag, message)
    return {"rows": rows, "who": run["who"], "log": log}


def test_the_rows_ran_as_nobody_with_the_same_interpreter_and_paths(as_user):
    assert as_user["who"] == [str(pwd.getpwnam(sandbox.NOBODY).pw_uid), sys.executable], as_user
    assert len(as_user["rows"]) >= len(ROWS), as_user["log"]


def not_held(found: dict[str, tuple[str, str]]) -> list[str]:
    """Of one row's results as nobody ({test id: (outcome, message)}), those that did not hold: every failure
    or error, and every skip but one EXPECTED_SKIPS names with its message.

    >>> not_held({"t[a]": ("passed", ""), "t[b]": ("skipped", "no sandbox"), "t[c]": ("failure", "assert 1 == 0")})
    ['t[b] as nobody: skipped: no sandbox', 't[c] as nobody: failure: assert 1 == 0']
    >>> cgroup = "test_twenty_processes_of_a_gigabyte_stay_within_the_sandbox_memory[cgroup]"
    >>> not_held({cgroup: ("skipped", "no cgroup can be made here: the watch is the wall")})
    []
    """
    return [f"{test_id} as nobody: {outcome}: {message}" for test_id, (outcome, message) in found.items()
            if outcome != "passed" and not (outcome == "skipped" and EXPECTED_SKIPS.get(test_id, "\0") in message)]


@pytest.mark.parametrize("row", ROWS, ids=lambda row: row.split("::")[1])
def test_each_attack_row_holds_as_a_user_who_is_not_root(as_user, row):
    path, name = row.split("::")
    module = path.removesuffix(".py").replace("/", ".")
    found = {n: r for (m, n), r in as_user["rows"].items() if m == module and (n == name or n.startswith(name + "["))}
    assert found, f"{row} did not run as nobody: {as_user['log']}"
    assert not_held(found) == []
