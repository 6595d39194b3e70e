"""The sandbox each submission runs in: bubblewrap (Debian's `bubblewrap`, the sandbox Flatpak uses).

Inside: a private read-only copy of the notebook, a size-limited private /tmp (the working folder,
HOME and a fresh IPYTHONDIR), the venv, the Python it was made from, the package, data/ and
benchmarks/results/ read-only, and nothing else of the checkout (no kit/, notebooks/, tests/, .git, no
other submission, no output folder). Its own user, PID, IPC, UTS and network namespaces (loopback
only): nothing it starts outlives it, and it sees no other process. Limits per process on address space,
processes, file size, CPU time and open files; a wall-clock limit on the whole. It always runs as an
unprivileged user: as root the grader first drops to `nobody`. `available()` says whether this machine
can make one; without it the grader refuses to run unless told `--unsafe`.
"""

from __future__ import annotations

import json
import os
import pwd
import resource
import secrets
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from kit import codec, runner, walls

KIT = Path(__file__).resolve().parent
RUNNER_FILES = ("runner.py", "codec.py")  # the only files of kit/ a sandbox sees: no check, no secret
INSIDE_RUNNER = "/opt/kit-runner"
INSIDE_JOB = "/opt/kit-job"
INSIDE_WORK = "/tmp/work"
NOBODY = "nobody"


@dataclass(frozen=True)
class Quota:
    """Per-process limits inside a sandbox (bytes, counts, seconds) and the size of its /tmp."""

    memory: int = 8 << 30
    processes: int = 256
    file_size: int = 256 << 20
    open_files: int = 1024
    cpu: int = 3600
    tmp_size: int = 512 << 20
    output: int = 64 << 20  # the most a sandbox may print back
    sandbox_memory: int = 6 << 30  # all its processes together (a cgroup, else a watch on its process tree)
    sandbox_processes: int = 512  # all its processes and threads together (a pids cgroup)
    cgroup: bool = True  # False: the watch even where a cgroup could be made (tests of the fallback)


class SandboxError(RuntimeError):
    """The sandbox could not be made (bwrap missing, user namespaces off)."""


def package_root() -> Path:
    """The folder that holds the `ragcourse` package (src/ in a checkout)."""
    import ragcourse

    return Path(ragcourse.__file__).resolve().parents[1]


def _read_only_paths() -> list[Path]:
    """What a sandbox may read: the interpreter's prefixes, the package, its data and stored results."""
    src = package_root()
    checkout = src.parent
    paths = {Path(sys.prefix), Path(sys.base_prefix), Path(sys.executable).resolve().parent.parent, src}
    from ragcourse.paths import DATA_DIR, RESULTS_DIR

    paths |= {p for p in (DATA_DIR, RESULTS_DIR, checkout / "models") if p.exists()}
    for folder in list(paths):  # data/corpus may be a link to another checkout's data
        if folder.is_dir():
            paths |= {child.resolve() for child in folder.iterdir() if child.is_symlink() and child.resolve().exists()}
    return sorted(paths)


def _system_paths() -> list[str]:
    return [p for p in ("/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc/alternatives", "/etc/ssl",
                        "/etc/ld.so.cache", "/etc/localtime", "/etc/nsswitch.conf") if os.path.exists(p)]


def bwrap_command(job_dir: Path, extra_ro: list[tuple[str, str]] = (), quota: Quota = Quota(),
                  package: bool = True, seccomp_fd: int | None = None) -> list[str]:
    """The bwrap command line for a sandbox that reads its job from `job_dir` (mounted read-only).

    All of /proc is read-only (no /proc/sys, /proc/sysrq-trigger or /proc/irq write, whatever the sandbox's
    user is on the host) and, given `seccomp_fd`, the filter of kit/walls.py is loaded."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise SandboxError("bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)")
    own_user = ["--uid", "65534", "--gid", "65534"] if _as_root() and not drop_to_nobody() else []
    cmd = [bwrap, "--unshare-all", "--unshare-user", *_no_nested_userns(bwrap), "--die-with-parent", *own_user,
           "--new-session", "--proc", "/proc", "--remount-ro", "/proc", "--dev", "/dev",
           *(["--seccomp", str(seccomp_fd)] if seccomp_fd is not None else []),
           "--size", str(quota.tmp_size), "--tmpfs", "/tmp", "--size", str(quota.tmp_size), "--tmpfs", "/dev/shm",
           "--dir", INSIDE_WORK, "--clearenv"]
    for path in _system_paths():
        cmd += ["--ro-bind", path, path]
    src = package_root()
    for path in _read_only_paths():
        if package or path != src:
            cmd += ["--ro-bind", str(path), str(path)]
    for name in RUNNER_FILES:
        cmd += ["--ro-bind", str(KIT / name), f"{INSIDE_RUNNER}/{name}"]
    cmd += ["--ro-bind", str(job_dir), INSIDE_JOB]
    for outside, inside in extra_ro:
        cmd += ["--ro-bind", outside, inside]
    env = {"HOME": "/tmp/home", "IPYTHONDIR": "/tmp/ipython", "MPLCONFIGDIR": "/tmp/mpl", "MPLBACKEND": "Agg",
           "JUPYTER_RUNTIME_DIR": "/tmp/jupyter-runtime", "JUPYTER_CONFIG_DIR": "/tmp/jupyter",
           "JUPYTER_DATA_DIR": "/tmp/jupyter-data", "JUPYTER_PLATFORM_DIRS": "1", "PYTHONNOUSERSITE": "1",
           "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": "/tmp",
           "PYTHONPATH": str(src) if package else "", "PYDEVD_DISABLE_FILE_VALIDATION": "1",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false",
           "RAGCOURSE_PROGRESS": "0", "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "2")}
    for name in ("RAGCOURSE_VARIANT", "RAGCOURSE_CACHE", "RAGCOURSE_DATA", "RAGCOURSE_RESULTS"):
        if name in os.environ:
            env[name] = os.environ[name]
    for name, value in env.items():
        cmd += ["--setenv", name, value]
    # bwrap's own root and /dev are tmpfs without a size: read-only, so only /tmp and /dev/shm (both sized) take files
    cmd += ["--remount-ro", "/dev", "--remount-ro", "/"]
    return cmd + ["--chdir", INSIDE_WORK, "--", sys.executable, "-I", f"{INSIDE_RUNNER}/runner.py"]


def tasks_of(uid: int) -> int:
    """Processes and threads whose real user is `uid` now: what the kernel's RLIMIT_NPROC counts."""
    count = 0
    for pid in os.listdir("/proc"):
        try:
            status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
                          if ":" in line) if pid.isdigit() else {}
        except OSError:
            continue
        if status and int(status["Uid"].split()[0]) == uid:
            count += int(status.get("Threads", "1"))
    return count


@cache
def _no_nested_userns(bwrap: str) -> tuple[str, ...]:
    """("--disable-userns",) where bwrap has it (0.8 and later, not setuid): a user namespace inside the
    sandbox would be "root" there and could mount a tmpfs without a size limit. Older bwrap: ()."""
    try:
        version = subprocess.run([bwrap, "--version"], capture_output=True, text=True, timeout=30).stdout.split()[-1]
        newer = tuple(int(x) for x in version.split(".")[:2]) >= (0, 8)
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return ()
    return ("--disable-userns",) if newer and not os.stat(bwrap).st_mode & 0o4000 else ()


def _limit(quota: Quota, drop: bool, group: walls.Group | None = None, inside: bool = True):
    """The function run in the child before bwrap: limits, a session of its own, and `nobody` as root.

    With `inside` (a sandbox), RLIMIT_NPROC is left to the runner, which sets it in the sandbox's own user
    namespace: there the kernel counts only that sandbox's processes, so neither the user's other processes
    nor a classmate's sandbox beside it (`-j`, same user) can use up its count. Without (`--unsafe`), it is
    set here, `quota.processes` more than the user already runs. The sandbox is the OOM killer's first
    choice (oom_score_adj 1000), never the grader.
    """
    user = pwd.getpwnam(NOBODY) if drop else None
    processes = None if inside else tasks_of(user.pw_uid if user else os.getuid()) + quota.processes

    def apply() -> None:
        os.setsid()
        if group is not None:
            group.enter()
        with open("/proc/self/oom_score_adj", "w") as handle:  # noqa: PTH123 - in the child, before exec
            handle.write("1000")
        for kind, value in ((resource.RLIMIT_AS, quota.memory), (resource.RLIMIT_NPROC, processes),
                            (resource.RLIMIT_FSIZE, quota.file_size), (resource.RLIMIT_NOFILE, quota.open_files),
                            (resource.RLIMIT_CPU, quota.cpu), (resource.RLIMIT_CORE, 0)):
            if value is not None:
                resource.setrlimit(kind, (value, value))
        if user is not None:
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)

    return apply


def _as_root() -> bool:
    return os.geteuid() == 0


def _reachable_by_others(path: Path) -> bool:
    """Whether a user other than the owner can reach `path` (every folder above it searchable by others)."""
    return all(os.stat(p).st_mode & 0o001 for p in [*reversed(path.parents), path] if p.is_dir())


@cache
def drop_to_nobody() -> bool:
    """As root, whether the sandbox can run as `nobody` (it must reach the interpreter and the package).

    When it cannot (an interpreter under /root), bwrap runs as root in a user namespace of its own, as
    uid 65534 inside: every limit holds but the process count, which the kernel never applies to root.
    """
    return _as_root() and all(_reachable_by_others(p) for p in _read_only_paths())


#: Job folders always go to the system temporary folder, never to a checker's exchange folder.
SYSTEM_TMP = tempfile.gettempdir()


@dataclass
class Launched:
    """A running sandbox: its bwrap process, job folder, and what bounds it as a whole (a cgroup, or a watch)."""

    proc: subprocess.Popen
    folder: Path
    group: walls.Group | None = None
    watch: walls.Watch | None = None

    def over(self) -> bool:
        """Whether the sandbox passed its memory limit (and was stopped)."""
        if self.watch is not None:
            return self.watch.check()
        return self.group is not None and self.group.oom_killed()


def _hand_over(path: Path, mode: int) -> Path:
    """`path` for the sandbox's user alone (`nobody` when the grader is root): no other local user reads a notebook."""
    path.chmod(mode)
    if drop_to_nobody():
        user = pwd.getpwnam(NOBODY)
        os.chown(path, user.pw_uid, user.pw_gid)
    return path


def share_exchange(folder: Path) -> None:
    """What a check wrote into its exchange folder, made readable by the sandbox's user: a check's
    `tempfile.TemporaryDirectory()` is a 0700 folder of the grader's, which `nobody` cannot enter."""
    if not drop_to_nobody():
        return  # the sandbox runs as the grader's own user (in a user namespace): it reads what the grader wrote
    for root, folders, files in os.walk(folder):
        for name in folders + files:
            path = Path(root) / name
            if not path.is_symlink():
                _hand_over(path, 0o700 if path.is_dir() else 0o600)


def _job_dir(prefix: str) -> Path:
    return _hand_over(Path(tempfile.mkdtemp(prefix=prefix, dir=walls.run_folder())), 0o700)


def _write_job(folder: Path, job: dict) -> Path:
    path = folder / "job.json"
    path.write_text(json.dumps(job), encoding="utf-8")
    return _hand_over(path, 0o600)


@cache
def available() -> str | None:
    """None when this machine can make a sandbox with all its walls; else why not (what the machine needs)."""
    if _as_root() and not drop_to_nobody() and not walls.cgroups_usable():
        return ("the sandbox's user would be root on the host (the interpreter is not reachable by nobody) and no "
                "pids cgroup can cap its processes: install the venv where nobody can read it, or grade as "
                "another user")
    folder = _job_dir("ragcourse-probe-")
    try:
        (folder / "probe.py").write_text("print(open('/proc/self/status').read().split('Seccomp:')[1].split()[0])\n",
                                         encoding="utf-8")
        with open(walls.seccomp_filter(), "rb") as rules:  # noqa: PTH123
            cmd = bwrap_command(folder, seccomp_fd=rules.fileno())[:-2] + [f"{INSIDE_JOB}/probe.py"]
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, pass_fds=(rules.fileno(),),
                                  preexec_fn=_limit(Quota(), drop_to_nobody()))  # noqa: PLW1509 - the child only
    except (SandboxError, walls.WallError, OSError, subprocess.TimeoutExpired) as err:
        return str(err)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    if done.stdout.strip() != "2":
        return ("bwrap could not make a sandbox with its seccomp filter (it needs unprivileged user namespaces: "
                "sysctl kernel.unprivileged_userns_clone=1 or user.max_user_namespaces > 0): "
                + done.stderr.strip()[:300])
    return None


def _read_bounded(run: Launched, limit: int, deadline: float) -> tuple[bytes, str | None]:
    """Standard output of a sandbox until it ends, `limit` bytes or the deadline; (bytes, why it was cut)."""
    chunks, size, fd = [], 0, run.proc.stdout.fileno()
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), "time"
        if run.over():
            return b"", "memory"
        ready, _, _ = select.select([fd], [], [], min(left, 0.25))
        if not ready:
            continue
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks), "memory" if run.over() else None
        size += len(chunk)
        if size > limit:
            return b"", "size"
        chunks.append(chunk)


#: CPU seconds of the sandboxes this process stopped (read just before each was killed): kit/grade.py's cost
CPU_SPENT = [0.0]


def _stop(run: Launched) -> None:
    """Kill the sandbox's whole session (bwrap, then its PID namespace goes with it), its cgroup and job folder."""
    CPU_SPENT[0] += walls.tree_cpu(run.proc.pid)
    try:
        os.killpg(run.proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    try:
        run.proc.kill()
    except ProcessLookupError:
        pass
    run.proc.wait()
    if run.group is not None:
        run.group.remove()
    shutil.rmtree(run.folder, ignore_errors=True)


def unsafe_command(job_dir: Path) -> list[str]:
    """No sandbox (`--unsafe`): the runner in a plain subprocess, the job read where it lies."""
    return [sys.executable, "-I", str(KIT / "runner.py")]


def _launch(mode: str, job: dict, unsafe: bool, quota: Quota, package: bool = True, extra_ro=()) -> Launched:
    folder = _job_dir(f"ragcourse-{mode}-")
    for name, data in job.pop("files", {}).items():
        (folder / name).write_bytes(data)
        _hand_over(folder / name, 0o600)
    inside = str(folder) if unsafe else INSIDE_JOB
    job = {k: (v.replace("{job}", inside) if isinstance(v, str) else v) for k, v in job.items()}
    if not unsafe:
        job["processes"] = quota.processes  # RLIMIT_NPROC, set by the runner inside the sandbox's user namespace
    _write_job(folder, job)
    group = walls.Group(quota.sandbox_memory, quota.sandbox_processes) if quota.cgroup and walls.cgroups_usable() \
        else None
    with open(walls.seccomp_filter(), "rb") if not unsafe else open(os.devnull, "rb") as rules:  # noqa: PTH123
        if unsafe:
            env = {**os.environ, "PYTHONPATH": str(package_root()) if package else ""}
            cmd, pre = unsafe_command(folder), _limit(quota, False, group, inside=False)
        else:
            env, pre = {}, _limit(quota, drop_to_nobody(), group)
            cmd = bwrap_command(folder, list(extra_ro), quota, package, rules.fileno())
        proc = subprocess.Popen([*cmd, mode, f"{inside}/job.json"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL if not os.environ.get("KIT_DEBUG") else None,
                                env=env, preexec_fn=pre, cwd=folder if unsafe else None,  # noqa: PLW1509
                                pass_fds=(rules.fileno(),))
    watch = walls.Watch(proc.pid, quota.sandbox_memory) if group is None else None
    return Launched(proc, folder, group, watch)


def run_notebook_raw(data: bytes, names: list[str], limits: dict, unsafe: bool = False,
                     quota: Quota = Quota()) -> tuple[bytes, str | None]:
    """Run a notebook (its bytes) in a fresh sandbox: what it printed back (untrusted, unread), and a note
    when it was stopped (time, size, memory)."""
    salt = secrets.token_hex(16)  # the answers' names go in sealed: a submission that reads its job learns none
    job = {"notebook": "{job}/submission.ipynb", "cwd": INSIDE_WORK, "digests": runner.sealed(names, salt),
           "salt": salt, "limits": limits,
           "variant_env": "RAGCOURSE_VARIANT", "files": {"submission.ipynb": data}}
    if unsafe:
        job["cwd"] = tempfile.mkdtemp(prefix="ragcourse-unsafe-", dir=walls.run_folder())
    run = _launch("notebook", job, unsafe, quota)
    run.proc.stdin.close()
    wall = min(limits["notebook"] + limits["check"] + 4 * limits["grace"] + 60, limits.get("submission", 1e9))
    try:
        out, cut = _read_bounded(run, quota.output, time.monotonic() + wall)
    finally:
        _stop(run)
        if unsafe:
            shutil.rmtree(job["cwd"], ignore_errors=True)
    notes = {"memory": f"the notebook's run passed its memory limit ({quota.sandbox_memory >> 20} MB for all its "
                       "processes) and was stopped",
             "time": f"the notebook's run passed its {wall:.0f} s wall-clock limit and was stopped",
             "size": f"the notebook's run printed more than {quota.output >> 20} MB back and was stopped"}
    return (b"", notes[cut]) if cut else (out, None)


def run_notebook(data: bytes, names: list[str], limits: dict, unsafe: bool = False, quota: Quota = Quota()) -> dict:
    """Run a notebook (its bytes) in a fresh sandbox; the runner's result (untrusted) or a note why none."""
    out, note = run_notebook_raw(data, names, limits, unsafe, quota)
    if note:
        return {"notes": [note]}
    try:
        result = json.loads(out.decode("utf-8"), parse_constant=codec._refuse)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return {"notes": ["the notebook's run ended without a readable result (did it kill its runner?)"]}
    return result if isinstance(result, dict) else {"notes": ["the notebook's run gave an unreadable result"]}


class FunctionTimeout(BaseException):  # noqa: N818 - not an Exception, so `except Exception` in a check cannot eat it
    """A student's function ran past the check's time: the whole check stops with this message."""


class StudentError(Exception):
    """A student's function raised something that is not a builtin or package exception."""


class Functions:
    """A student's functions, defined from their own cells in a fresh sandbox and called on inputs only.

    `proxy(name)` is a callable for a check: its arguments go in as data, the result comes back as data.
    """

    def __init__(self, statements: list[str], deadline: float, unsafe: bool = False, package: bool = True,
                 exchange: Path | None = None, quota: Quota = Quota()):
        self.statements, self.deadline, self.unsafe, self.package = statements, deadline, unsafe, package
        self.exchange, self.quota = exchange, quota
        self.run: Launched | None = None
        self.calls, self.seconds = 0, 0.0

    def _start(self) -> None:
        extra = [(str(self.exchange), str(self.exchange))] if self.exchange else []
        job = {"statements": self.statements}
        self.run = _launch("function", job, self.unsafe, self.quota, self.package, extra)

    def close(self) -> None:
        """Stop the sandbox, if one is running."""
        if self.run is not None:
            _stop(self.run)
            self.run = None

    def call(self, name: str, args: tuple, kwargs: dict):
        """fn(*args, **kwargs) in the sandbox; its value (as data), or the exception it raised."""
        if time.monotonic() >= self.deadline:
            raise FunctionTimeout(f"ran past its {self.seconds:.0f} s limit (does your code loop?)")
        if self.run is None:
            self._start()
        if self.exchange is not None:
            share_exchange(self.exchange)
        self.calls += 1
        request = {"id": self.calls, "name": name, "args": codec.encode(list(args)), "kwargs": codec.encode(kwargs)}
        try:
            self.run.proc.stdin.write((json.dumps(request, allow_nan=False) + "\n").encode())
            self.run.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self.close()
            raise StudentError("your function's process ended (did it exit or crash?)") from None
        reply = self._reply()
        if "error" in reply:
            raise _exception(str(reply.get("error")), str(reply.get("message", ""))[:300])
        return codec.decode(reply.get("value"))

    def _reply(self) -> dict:
        fd, buffer = self.run.proc.stdout.fileno(), b""
        while True:
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.close()
                raise FunctionTimeout(f"ran past its {self.seconds:.0f} s limit (does your code loop?)")
            if self.run.over():
                self.close()
                raise StudentError("your function passed its memory limit and was stopped")
            ready, _, _ = select.select([fd], [], [], min(left, 0.25))
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                self.close()
                raise StudentError("your function's process ended (did it exit or crash?)")
            buffer += chunk
            if len(buffer) > self.quota.output:
                self.close()
                raise StudentError("your function returned more data than the grader reads")
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                try:
                    reply = json.loads(line, parse_constant=codec._refuse)
                except ValueError:
                    continue
                if isinstance(reply, dict) and reply.get("id") == self.calls:
                    return reply

    def proxy(self, name: str):
        """A stand-in for the student's function `name`, for a check to call."""

        def call(*args, **kwargs):
            return self.call(name, args, kwargs)

        call.__name__ = call.__qualname__ = name
        return call


def _exception(kind: str, message: str) -> BaseException:
    """The exception a student's function raised, rebuilt only when it is a builtin exception or one of the
    package's, from a module already imported (a name in the data never makes the grader import anything)."""
    import builtins

    module, _, qualname = kind.partition(":")
    found = None
    if module == "builtins":
        found = getattr(builtins, qualname, None)
    elif module.startswith("ragcourse.") and qualname.isidentifier() and module in sys.modules:
        found = getattr(sys.modules[module], qualname, None)
        found = found if isinstance(found, type) and found.__module__ == module else None
    if isinstance(found, type) and issubclass(found, Exception):
        try:
            return found(message)
        except Exception:  # noqa: BLE001 - an exception class with another signature
            pass
    return StudentError(f"{qualname[:60]}: {message}")
