"""What runs inside a sandbox (kit/sandbox.py): a student's notebook, or a student's function on inputs.

`python runner.py notebook JOB` runs the notebook cell by cell in a kernel of its own (nbclient, limits
per cell and per notebook, surviving interrupts and dead kernels), then exports the answers the job names
as JSON data (kit/codec.py) and writes one JSON document to its standard output. `python runner.py
function JOB` defines the student's functions from the job's source, then answers calls read as JSON
lines on standard input. Neither mode ever sees a check, an expected value or the reference notebook:
whatever this prints is treated by the grader as the student's own claim.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAX_NOTE = 300


@dataclass(frozen=True)
class Limits:
    """Seconds: per cell, per notebook (all its cells), per hidden check, to recover from an interrupt, and per
    submission; and the checker kernel's memory in bytes."""

    cell: float = 600
    notebook: float = 1800
    check: float = 300
    grace: float = 15
    submission: float = 2700  # everything one notebook may cost: its run and all its checks
    checker_memory: int = 6 << 30  # bytes the trusted checker kernel may hold (kit/walls.py's Guard)


@dataclass
class Run:
    """What happened to one notebook in one kernel: notes for the feedback, the kernel's environment."""

    notes: list[str] = field(default_factory=list)
    environment: dict = field(default_factory=dict)
    alive: bool = True
    not_attempted: set = field(default_factory=set)


class Kernel:
    """One kernel (this interpreter), executing cells with limits, surviving what it can."""

    def __init__(self, nb, cwd: Path, limits: Limits, env: dict | None = None):
        from nbclient import NotebookClient

        self.limits = limits
        self.client = NotebookClient(nb, kernel_name="python3", allow_errors=True, interrupt_on_timeout=False,
                                     record_timing=False, resources={"metadata": {"path": str(cwd)}})
        self.km = self.client.create_kernel_manager()
        spec = self.km.kernel_spec
        spec.argv = [sys.executable, *spec.argv[1:]]  # this interpreter, never a stale spec
        if env is not None:
            spec.env = env

    def __enter__(self):
        self._setup = self.client.setup_kernel()
        self._setup.__enter__()
        return self

    def __exit__(self, *exc):
        from jupyter_client.utils import run_sync

        try:
            self._setup.__exit__(None, None, None)
        except Exception:  # noqa: BLE001 - a wedged kernel is killed below either way
            pass
        if self.km.has_kernel:
            run_sync(self.km.shutdown_kernel)(now=True)

    def execute(self, cell, index: int, timeout: float, run: Run) -> str | None:
        """Run one cell; None when it finished, else "error", "timeout" or "dead" (and run.alive updated)."""
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        self.client.timeout = max(1, int(timeout))
        try:
            self.client.execute_cell(cell, index)
        except CellTimeoutError:
            self._recover(run)
            return "timeout"
        except DeadKernelError:
            run.alive = False
            return "dead"
        if any(o.get("output_type") == "error" for o in cell.get("outputs", [])):
            return "error"
        return None

    def _recover(self, run: Run) -> None:
        import nbformat
        from jupyter_client.utils import run_sync
        from nbclient.exceptions import CellTimeoutError, DeadKernelError

        run_sync(self.km.interrupt_kernel)()
        # nbclient leaves the timed-out cell's output reader on the old channels, where it would swallow
        # the next cells' outputs: talk to the kernel over fresh channels instead.
        self.client.kc.stop_channels()
        self.client.kc = self.km.client()
        self.client.kc.start_channels()
        probe = nbformat.v4.new_code_cell("pass")
        self.client.timeout = max(1, int(self.limits.grace))
        try:
            self.client.execute_cell(probe, 0)
        except (CellTimeoutError, DeadKernelError):
            run.alive = False
            run.notes.append("the kernel did not answer an interrupt, so it was stopped")


def run_cells(kernel, nb, limits: Limits, run: Run) -> None:
    """Every code cell of `nb` in `kernel`, in order, within the cell and notebook limits; notes in `run`."""
    deadline = time.monotonic() + limits.notebook
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        label = _label(cell, index)
        left = deadline - time.monotonic()
        if left <= 0:
            run.notes.append(f"the notebook's {limits.notebook:.0f} s ran out: {label} and the cells after it "
                             "did not run")
            return
        outcome = kernel.execute(cell, index, min(limits.cell, left), run)
        if outcome == "error":
            error = next(o for o in cell.outputs if o.get("output_type") == "error")
            run.notes.append(f"{label} raised {error.get('ename')}: {str(error.get('evalue'))[:160]}")
            if error.get("ename") == "NotImplementedError" and isinstance(exercise_meta(cell), dict):
                run.not_attempted.add(str(exercise_meta(cell).get("id")))
        elif outcome == "timeout":
            run.notes.append(f"{label} ran past its limit ({min(limits.cell, left):.0f} s) and was interrupted")
        elif outcome == "dead":
            run.notes.append(f"the kernel died in {label}: nothing after it could run")
        if not run.alive:
            return


def exercise_meta(cell) -> dict | None:
    """The `exercise` metadata of a cell, if it has any (a student's notebook may hold anything there)."""
    meta = cell.get("metadata", {})
    return meta.get("exercise") if isinstance(meta, dict) else None


def _label(cell, index: int) -> str:
    exercise = exercise_meta(cell)
    exercise = exercise.get("id") if isinstance(exercise, dict) else None
    return f"the answer cell of exercise {str(exercise)[:20]}" if exercise else f"code cell {index + 1}"


def sealed(names: list[str], salt: str) -> list[str]:
    """The answers' names as salted digests, so that neither the job file nor the export cell lists them.

    >>> sealed(["b", "a"], "s") == sorted(sealed(["a", "b"], "s")) and "a" not in sealed(["a"], "s")
    True
    """
    return sorted(hashlib.sha256((salt + name).encode("utf-8")).hexdigest() for name in names)


def export_source(digests: list[str], salt: str, token: str, variant_env: str) -> str:
    """The cell that prints, tagged with `token`, the JSON of the answers whose `sealed` digest is in `digests`
    (the notebook's names are hashed with `salt`: the cell itself names no answer) and the environment."""
    codec = (HERE / "codec.py").read_text(encoding="utf-8")
    return f"""def _kit_export():
    import hashlib, json, os, sys, types
    codec = types.ModuleType("_kit_codec")
    sys.modules["_kit_codec"] = codec  # dataclasses look their module up
    exec(compile({codec!r}, "codec.py", "exec"), codec.__dict__)
    values, problems, wanted = {{}}, {{}}, set({digests!r})
    for name in [n for n in list(globals()) if isinstance(n, str)]:
        if hashlib.sha256(({salt!r} + name).encode("utf-8", "replace")).hexdigest() in wanted:
            try:
                values[name] = codec.encode(globals()[name])
            except Exception as err:  # noqa: BLE001 - an object that lies (raises in __iter__): this answer only
                problems[name] = (str(err) if isinstance(err, codec.Unsupported) else type(err).__name__)[:200]
    try:
        from ragcourse.book.exercises import environment
        env = environment()
    except Exception as err:  # noqa: BLE001
        env = {{"error": type(err).__name__}}
    print({token!r}, json.dumps({{"values": values, "problems": problems, "environment": env,
                                  "variant": os.environ.get({variant_env!r}, "0")}}, allow_nan=False))


_kit_export()
del _kit_export
"""


def notebook_main(job: dict) -> dict:
    """Run the job's notebook, then its export cell; the result the grader reads."""
    import secrets

    import nbformat

    limits, run = Limits(**job["limits"]), Run()
    try:
        nb = nbformat.read(job["notebook"], as_version=4)
    except Exception as err:  # noqa: BLE001 - not a notebook at all
        return {"notes": [f"the file is not a readable notebook: {type(err).__name__}"], "readable": False}
    token = "kit" + secrets.token_hex(8)
    env = {k: v for k, v in os.environ.items() if k != "KIT_RESULT_FD"}
    exported = None
    try:
        with Kernel(nb, Path(job["cwd"]), limits, env) as kernel:
            run_cells(kernel, nb, limits, run)
            if run.alive:
                cell = nbformat.v4.new_code_cell(export_source(job["digests"], job["salt"], token, job["variant_env"]))
                kernel.execute(cell, 0, limits.check, run)
                exported = _tagged(cell, token)
    except Exception as err:  # noqa: BLE001 - a kernel that will not start
        run.notes.append(f"the notebook could not be run: {type(err).__name__}: {str(err)[:200]}")
    if exported is None and run.alive:
        run.notes.append("the answers could not be read from the notebook's kernel")
    return {"notes": run.notes, "not_attempted": sorted(run.not_attempted), "exported": exported, "readable": True}


def _tagged(cell, token: str):
    text = "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("output_type") == "stream")
    for line in text.splitlines():
        if line.startswith(token + " "):
            return json.loads(line[len(token) + 1:])
    return None


def function_main(job: dict, channel) -> None:
    """Define the job's functions, then answer calls (one JSON line each) until standard input ends."""
    sys.path.insert(0, str(HERE))
    import codec

    codec.IMPORT_RECORDS = True  # the checks' inputs may be the package's records, from modules not yet imported
    # `python -I` ignores PYTHONPATH: the package's folder (when this sandbox has one) is added here.
    sys.path[1:1] = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]

    namespace = {"__name__": "__main__"}
    for source in job["statements"]:
        try:
            exec(compile(source, "<your notebook>", "exec"), namespace)  # noqa: S102 - the student's own code
        except BaseException:  # noqa: BLE001, S110 - a statement that fails here is the student's
            pass
    for line in sys.stdin:
        request = json.loads(line)
        try:
            fn = namespace[request["name"]]
            args = codec.decode(request["args"])
            kwargs = codec.decode(request["kwargs"])
            reply = {"id": request["id"], "value": codec.encode(fn(*args, **kwargs))}
        except BaseException as err:  # noqa: BLE001 - reported, then the grader decides
            kind = type(err)
            reply = {"id": request["id"], "error": f"{kind.__module__}:{kind.__qualname__}",
                     "message": str(err)[:MAX_NOTE]}
        channel.write(json.dumps(reply, allow_nan=False) + "\n")
        channel.flush()


def main(argv: list[str]) -> int:
    mode, job_path = argv
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    if "processes" in job:  # in the sandbox's user namespace, this counts only the sandbox's own processes
        import resource

        resource.setrlimit(resource.RLIMIT_NPROC, (job["processes"], job["processes"]))
    # The result goes to a private copy of standard output; the student's code gets /dev/null as fd 1.
    channel = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    sys.stdout = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - for the process's lifetime
    if mode == "function":
        function_main(job, channel)
        return 0
    channel.write(json.dumps(notebook_main(job), allow_nan=False))
    channel.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
