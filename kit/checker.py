"""The checks' side of grading: a trusted kernel that ran the reference chapter, scoring answers sent as data.

The grader starts this kernel (never one that ran a student's code), runs the chapter's reference
notebook in it, then `Checker` takes over: per student, `ns` is the reference run's namespace without the
answer cells' names, plus the student's answers decoded from JSON (kit/codec.py), plus, for each function
they defined, a stand-in that runs it in a fresh sandbox (kit/sandbox.py) on the check's inputs. The checks
(kit/checks/chNN.py) and every expected value stay here.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path

from kit import cache, codec, definitions
from kit.checks.compare import NotOwnWork
from kit.hidden import Hidden, load, score
from kit.sandbox import Functions, FunctionTimeout

MAX_FEEDBACK = 500


class Checker:
    """One chapter's checks over one reference namespace; `student` then `run` per exercise."""

    def __init__(self, checks_path: str, context: dict, answer_names: list[str], exchange: str | None = None):
        path = Path(checks_path)
        self.source = path.read_text(encoding="utf-8")
        self.checks: dict[str, Hidden] = load(self.source, path.name)
        self.answer_names = set(answer_names)
        self.context = {k: v for k, v in context.items() if k not in self.answer_names and not k.startswith("_")}
        self.values: dict = {}
        self.functions: dict[str, dict] = {}
        self.sandboxes: dict[bool, Functions] = {}
        self.unsafe, self.seconds = False, 300.0
        # Files a check writes as a function's inputs (tempfile, during `run`) go here; the function's sandbox
        # sees this folder read-only, and nothing else of the checker's.
        # The grader makes (and removes) this folder when it gives one.
        self.exchange = Path(exchange) if exchange else Path(tempfile.mkdtemp(prefix="ragcourse-exchange-"))
        self.exchange.chmod(0o755)

    @classmethod
    def from_state(cls, checks_path: str, state: str, answer_names: list[str], exchange: str | None = None):
        """A checker over a reference state saved by `save_state` (no reference run); RuntimeError when none."""
        values = cache.load(Path(state))
        if values is None:
            raise RuntimeError("no usable cached reference state")
        return cls(checks_path, values, answer_names, exchange)

    def save_state(self, state: str) -> list[str]:
        """Keep the reference values the checks may read at `state`; the names that could not be kept."""
        import cloudpickle

        names = cache.needed(self.source, self.context)
        kept, lost = {}, []
        for name in names:
            try:
                kept[name] = cloudpickle.dumps(self.context[name])
            except Exception:  # noqa: BLE001 - an object that does not pickle: no cache for this chapter
                lost.append(name)
        if not lost:
            cache.save(Path(state), kept)
        return lost

    def student(self, job_path: str) -> None:
        """Load one student's answers (values as codec JSON, function sources) from the grader's job file."""
        self.close()
        # Nothing of the previous student survives a failure below (their functions would be run for this one).
        self.values, self.problems, self.functions = {}, [], {}
        job = json.loads(Path(job_path).read_text(encoding="utf-8"))
        self.unsafe, self.seconds = bool(job.get("unsafe")), float(job.get("check_seconds", 300))
        for name, data in job.get("values", {}).items():
            if name not in self.answer_names:
                continue
            try:
                self.values[name] = codec.decode(data)
            except Exception:  # noqa: BLE001 - MemoryError too: whatever the data, it is this answer's problem
                self.problems.append(f"`{name}` could not be read back as data")
        self.functions = job.get("functions", {})

    def namespace(self, by_hand: bool, forbids: tuple[str, ...] = ()) -> dict:
        """What a check sees: the reference's namespace, the student's answers, stand-ins for their functions."""
        ns = dict(self.context)
        for name, value in self.values.items():
            if isinstance(value, codec.Marker):
                if value.kind == "function" and name in self.functions:
                    ns[name] = self._stand_in(name, by_hand, forbids)
                continue
            ns[name] = value
        return ns

    def _stand_in(self, name: str, by_hand: bool, forbids: tuple[str, ...] = ()):
        statements = self.functions[name]
        refused = definitions.not_own_work(statements, name, forbids)
        if refused is not None:
            def refuse(*args, **kwargs):
                raise NotOwnWork(refused)

            return refuse
        sandbox = self.sandboxes.get(by_hand)
        if sandbox is None:
            program = [s for n in self.functions for s in self.functions[n]]
            sandbox = self.sandboxes[by_hand] = Functions(list(dict.fromkeys(program)), 0.0, self.unsafe,
                                                          package=not by_hand, exchange=self.exchange)
        return sandbox.proxy(name)

    def run(self, exercise: str, token: str, seconds: float | None = None) -> None:
        """Score one exercise (within `seconds`, else the job's limit per check) and print the result as one
        JSON line tagged with `token`."""
        hidden = self.checks[exercise]
        seconds = min(self.seconds, seconds) if seconds is not None else self.seconds
        deadline = time.monotonic() + seconds
        ns = self.namespace(hidden.by_hand, hidden.forbids)
        for sandbox in self.sandboxes.values():
            sandbox.deadline, sandbox.seconds = deadline, seconds
        before, tempfile.tempdir = tempfile.tempdir, str(self.exchange)
        try:
            points, feedback = score(hidden, ns)
        except FunctionTimeout as err:
            points, feedback = 0.0, f"your function {err}"
        finally:
            tempfile.tempdir = before
        print(token, json.dumps({"exercise": exercise, "points": points, "feedback": str(feedback)[:MAX_FEEDBACK]}))

    def close(self) -> None:
        """Stop the student's function sandboxes."""
        for sandbox in self.sandboxes.values():
            sandbox.close()
        self.sandboxes = {}
