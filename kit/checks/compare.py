"""What every hidden check compares with: any form of a correct answer accepted, nothing of the expected value told.

A check reads a student's answer through these (`integer`, `number`, `items`, `keyed`), compares with
`close` (shapes first, so an empty or broadcastable array never matches), wraps its own reference
computation in `reference` (a failure there is the grader's, not the student's), and explains a partial
mark by returning `Partly(fraction, why)`.

>>> integer(np.int64(4), "answer_n"), number(np.float32(0.5), "x"), items((1, 2), "pair", 2)
(4, 0.5, [1, 2])
>>> close([0.1, 0.2], np.array([0.1, 0.2 + 1e-9]), 1e-6), close(np.empty((0, 2)), [[1.0, 2.0]], 1e-6)
(True, False)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

import numpy as np


class Partly(NamedTuple):
    """A partial mark and why, in the student's terms and without the expected value."""

    fraction: float
    why: str


class CheckFailed(Exception):  # noqa: N818 - the grader's failure, named for what the instructor reads
    """The check's own reference computation failed: the grader's fault, never the student's."""


class NotOwnWork(BaseException):  # noqa: N818 - not an Exception, so a check's `except Exception` cannot eat it
    """The student's function is not their own work (an import, an alias, a copy, a forbidden call)."""


@contextmanager
def reference(what: str) -> Iterator[None]:
    """Run the check's own computation of `what`; any error in it becomes CheckFailed (type only).

    >>> with reference("the expected MRR"):
    ...     1 / 0
    Traceback (most recent call last):
    kit.checks.compare.CheckFailed: the expected MRR (ZeroDivisionError)
    """
    try:
        yield
    except (AssertionError, CheckFailed):
        raise
    except Exception as err:  # noqa: BLE001 - whatever failed, it is the grader's
        raise CheckFailed(f"{what} ({type(err).__name__})") from None


def given(ns: Mapping[str, Any], name: str) -> Any:
    """The student's answer `name`, or an AssertionError saying it is not defined."""
    assert name in ns, f"`{name}` is not defined: run your answer cell (and the cells above it) first"
    return ns[name]


def _scalar(value: Any) -> Any:
    """A 0-d array or a one-element numpy scalar as a Python value."""
    if isinstance(value, np.ndarray) and value.ndim == 0 or isinstance(value, np.generic):
        return value.item()
    return value


def integer(value: Any, name: str, low: int | None = None, high: int | None = None) -> int:
    """An integer answer as int, whatever its type (Python, numpy, an integral float); bool is refused.

    >>> integer(4.0, "n"), integer(np.array(7), "n")
    (4, 7)
    """
    value = _scalar(value)
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value)
    assert ok and value == int(value), f"`{name}` should be an integer"
    value = int(value)
    if low is not None and high is not None:
        assert low <= value <= high, f"`{name}` should be an integer from {low} to {high}"
    return value


def number(value: Any, name: str) -> float:
    """A finite real answer as float, whatever its type; bool is refused."""
    value = _scalar(value)
    ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
    assert ok and math.isfinite(value), f"`{name}` should be a finite number"
    return float(value)


def items(value: Any, name: str, length: int | None = None) -> list:
    """A list, tuple, 1-d array or Series answer as a list of Python values; its length checked when given."""
    if hasattr(value, "tolist") and not isinstance(value, np.generic):
        value = value.tolist()
    assert isinstance(value, list | tuple), f"`{name}` should be a list or tuple"
    assert length is None or len(value) == length, f"`{name}` should have {length} items, not {len(value)}"
    return [_scalar(x) for x in value]


def keyed(value: Any, name: str) -> dict:
    """A dict (or Series) answer with numpy keys and values as Python values."""
    if hasattr(value, "to_dict") and not isinstance(value, dict):
        value = value.to_dict()
    assert isinstance(value, Mapping), f"`{name}` should be a dict"
    return {_scalar(k): _scalar(v) for k, v in value.items()}


def close(got: Any, expected: Any, tolerance: float) -> bool:
    """True when `got` has the expected shape and every entry is within `tolerance` (shape first, then values)."""
    try:
        mine = np.asarray(got, dtype=float)
    except (TypeError, ValueError):
        return False
    theirs = np.asarray(expected, dtype=float)
    if mine.shape != theirs.shape or mine.size != theirs.size:
        return False
    return bool(np.all(np.isfinite(mine)) and np.allclose(mine, theirs, rtol=0, atol=tolerance))


def in_grid(value: Any, grid: list) -> Any:
    """The grid's own element equal to `value` (so 1 and 1.0 and np.float64(1) all find it), or None."""
    value = _scalar(value)
    return next((g for g in grid if isinstance(value, numbers.Real) and not isinstance(value, bool)
                 and math.isclose(float(g), float(value), rel_tol=1e-12, abs_tol=1e-12)), None)


def misses(call: Callable[..., Any], cases: Sequence[tuple], expected: Sequence[Any],
           same: Callable[[Any, Any], bool]) -> int:
    """How many unseen cases `call(*case)` gets wrong by `same(got, want)`; a crash costs its own case only.

    >>> misses(lambda x: 2 * x, [(1,), (2,), ("a",)], [2, 5, 0], lambda got, want: got == want)
    2
    """
    wrong = 0
    for case, want in zip(cases, expected, strict=True):
        try:
            ok = same(call(*case), want)
        except Exception:  # noqa: BLE001 - a crash on one case costs that case only
            ok = False
        wrong += not ok
    return wrong


def by_share(wrong: int, total: int, rule: str, hint: str) -> Partly | None:
    """Full marks when no unseen case is wrong, none (naming the `rule`) when all are, else the share right.

    >>> by_share(0, 4, "r", "h"), by_share(1, 4, "r", "h")
    (None, Partly(fraction=0.75, why='1 of 4 unseen cases differ (h)'))
    """
    if wrong == 0:
        return None
    assert wrong < total, f"wrong on every case: {rule}"
    return Partly(1 - wrong / total, f"{wrong} of {total} unseen cases differ ({hint})")


def by_count(right: int, total: int, floors: tuple[int, int], why: str) -> Partly | None:
    """Full marks when all `total` unseen cases are right; 2/3 from `floors[1]` right, 1/3 from `floors[0]`, else none.

    >>> by_count(8, 8, (3, 6), "w"), by_count(6, 8, (3, 6), "w").fraction, by_count(3, 8, (3, 6), "w").fraction
    (None, 0.6666666666666666, 0.3333333333333333)
    """
    if right == total:
        return None
    assert right >= floors[0], why
    return Partly(2 / 3 if right >= floors[1] else 1 / 3, why)
