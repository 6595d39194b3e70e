"""The registry the hidden checks in kit/checks/chNN.py use: one function per exercise.

A check receives the student's notebook namespace (its globals after the notebook ran) and either
returns None (full marks), returns a fraction in [0, 1] (partial marks), or raises AssertionError
whose message is the feedback the student sees. It must not print the expected value.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kit.checks.compare import CheckFailed, NotOwnWork, Partly

Check = Callable[[dict[str, Any]], float | None]


@dataclass(frozen=True)
class Hidden:
    """One exercise's hidden check: its id ("3.2"), points, what it tests (shown to instructors).

    `by_hand`: the exercise asks for a function the package already has, so the student's runs in a
    sandbox without the package, and a copy of the package's own (up to names and constants) is refused.
    `forbids`: names the exercise's text says not to call; a function that mentions one is refused.
    """

    exercise: str
    points: int
    tests: str
    fn: Check
    by_hand: bool = False
    forbids: tuple[str, ...] = ()


CHECKS: dict[str, Hidden] = {}


def check(exercise: str, points: int, by_hand: bool = False, forbids: tuple[str, ...] = ()) -> Callable[[Check], Check]:
    """Register `fn` as the hidden check of `exercise`; its docstring says what it tests."""

    def register(fn: Check) -> Check:
        if exercise in CHECKS:
            raise ValueError(f"exercise {exercise} already has a hidden check")
        CHECKS[exercise] = Hidden(exercise, points, (fn.__doc__ or "").strip(), fn, by_hand, tuple(forbids))
        return fn

    return register


def load(source: str, filename: str = "kit/checks/chNN.py") -> dict[str, Hidden]:
    """Run one chapter's check file against a fresh registry and return what it registered.

    The check file imports `kit.hidden`; for the duration of the run that name is this module, with
    an empty registry, so loading a file twice (or two chapters in one kernel) never clashes.
    """
    import sys
    import types

    fresh = types.ModuleType("kit.hidden")
    fresh.__dict__.update(Hidden=Hidden, Check=Check, CHECKS={}, check=None)

    def register(exercise: str, points: int, by_hand: bool = False,
                 forbids: tuple[str, ...] = ()) -> Callable[[Check], Check]:
        def add(fn: Check) -> Check:
            if exercise in fresh.CHECKS:
                raise ValueError(f"exercise {exercise} already has a hidden check")
            fresh.CHECKS[exercise] = Hidden(exercise, points, (fn.__doc__ or "").strip(), fn, by_hand,
                                            tuple(forbids))
            return fn

        return add

    fresh.check = register
    import kit.checks.compare  # noqa: F401 - in sys.modules, so check files import it while `kit` is swapped

    saved = {name: sys.modules.get(name) for name in ("kit", "kit.hidden")}
    package = types.ModuleType("kit")
    package.hidden = fresh
    sys.modules.update({"kit": package, "kit.hidden": fresh})
    try:
        namespace: dict[str, Any] = {"__name__": "kit_checks", "__file__": filename}
        exec(compile(source, filename, "exec"), namespace)  # noqa: S102 - the instructor's own check file
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old
    return dict(fresh.CHECKS)


def score(hidden: Hidden, ns: dict[str, Any]) -> tuple[float, str]:
    """Run one hidden check on the namespace `ns`: (points earned, feedback that hides the expected value).

    Feedback is the check's own words (an assertion or a `Partly` explanation); any other exception is
    reduced to its type, since its text may quote a hidden input or the expected value.
    """
    try:
        result = hidden.fn(ns)
    except AssertionError as err:
        return 0.0, str(err) or "not correct"
    except NotImplementedError:
        return 0.0, "not attempted: the answer still raises NotImplementedError"
    except NotOwnWork as err:
        return 0.0, str(err)
    except KeyError as err:  # the check reads a name the notebook did not define (its text could be anything)
        name = err.args[0] if err.args and isinstance(err.args[0], str) and err.args[0].isidentifier() else None
        if name is not None and name not in ns:
            return 0.0, f"`{name[:60]}` is not defined: did its cell run without an error?"
        return 0.0, _raised(err)
    except CheckFailed as err:
        return 0.0, f"check failed: {err}; tell your instructor (your answer was not judged)"
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # noqa: BLE001 - a student's code may raise anything, SystemExit included
        return 0.0, _raised(err)
    return _marked(hidden.points, result)


def _raised(err: BaseException) -> str:
    """Feedback for an exception out of a check: its type and a fixed line, never its text."""
    kind = type(err).__name__
    if kind in ("FunctionTimeout", "StudentError") and str(err).startswith(("ran past", "your function")):
        return f"your function {str(err).removeprefix('your function ')}"  # the sandbox's own fixed words
    return f"your answer raised {kind[:60]} when the check used it"


def _marked(points: int, result: Any) -> tuple[float, str]:
    """(points, feedback) for what a check returned: None (full), a fraction, or Partly(fraction, why)."""
    why = ""
    if isinstance(result, Partly):
        result, why = result.fraction, result.why
    if result is None:
        return float(points), "full marks"
    fraction = float(result)
    fraction = min(1.0, max(0.0, fraction)) if fraction == fraction else 0.0
    if fraction == 1:
        return float(points), "full marks"
    return round(points * fraction, 2), f"partly right: {why}" if why else f"partly right ({fraction:.0%} of the marks)"
