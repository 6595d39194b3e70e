"""The precision at which the course ranks and publishes numbers, so every machine gets the same ones.

Float32 matrix products round differently on different CPU generations (other SIMD kernels), even
at a fixed thread count: the same cosine distance comes out as 0.8063636 on one machine and
0.8063634 on another. Two rules keep that noise out of every result the book shows:

- **Ranking.** Scores (cosine distances, BM25 scores, fused RRF scores, MaxSim scores) are rounded
  to `DECIMALS` places before anything is ordered, and equal rounded scores are ordered by
  position. A difference below 1e-6 then decides a rank only when it straddles a rounding boundary.
- **Publishing.** A number that leaves a notebook (glued into the prose, printed, shown in a table)
  is rounded at the source to what the prose needs: metrics to 3 decimals, distances to 3 or 4.

What it leaves out: rounding does not remove noise, it moves it to rounding boundaries; a value
within 1e-7 of a boundary can still round two ways. That is why published numbers keep 3 or 4
places (a flip then needs a value within 1e-7 of a boundary 1e-3 wide), and why `make test` runs
the notebooks a second time with an older CPU's kernels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

#: Decimal places kept in every score before it is ordered (distances, BM25, RRF, MaxSim).
DECIMALS = 6

#: Decimal places a published float keeps unless the caller asks for another precision.
PUBLISHED = 3


def rounded_scores(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    """Scores as float64, rounded to `DECIMALS` places: `rounded_scores([0.12345649]) -> [0.123456]`."""
    return np.round(np.asarray(scores, dtype=np.float64), DECIMALS)


def stable_order(scores: Sequence[float] | np.ndarray, descending: bool = False) -> np.ndarray:
    """Positions sorted by rounded score, ties by position.

    >>> stable_order([0.2, 0.1, 0.2000001]).tolist()  # 0.2 and 0.2000001 are one score at 6 places
    [1, 0, 2]
    >>> stable_order([1.0, 3.0, 1.0], descending=True).tolist()
    [1, 0, 2]
    """
    values = rounded_scores(scores)
    return np.lexsort((np.arange(len(values)), -values if descending else values))


def rounded(value: Any, decimals: int = PUBLISHED) -> Any:
    """A copy of `value` with every float rounded to `decimals` places (ints, strings, bools kept).

    Walks dicts, lists, tuples, numpy arrays and pandas objects; numpy scalars become Python numbers.

    >>> rounded({"mrr": 0.514888136654662, "n": 64, "ci": (0.5182085, 0.7471160)})
    {'mrr': 0.515, 'n': 64, 'ci': (0.518, 0.747)}
    """
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float | np.floating):
        value = float(value)
        return value if not math.isfinite(value) else round(value, decimals) + 0.0  # no -0.0
    if isinstance(value, np.integer | np.bool_):
        return value.item()
    if isinstance(value, np.ndarray):
        return np.round(value, decimals) + 0.0 if value.dtype.kind == "f" else value
    if hasattr(value, "round") and hasattr(value, "select_dtypes"):  # a pandas DataFrame
        out = value.copy()
        for column in value.select_dtypes("float").columns:  # + 0.0: -1e-16 shows as 0.000, not -0.000
            out[column] = value[column].round(decimals) + 0.0
        return out
    if hasattr(value, "round") and hasattr(value, "dtype"):  # a pandas Series
        return value.round(decimals) + 0.0 if value.dtype.kind == "f" else value
    if isinstance(value, Mapping):
        return type(value)({k: rounded(v, decimals) for k, v in value.items()})
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a NamedTuple
        return type(value)(*(rounded(v, decimals) for v in value))
    if isinstance(value, list | tuple):
        return type(value)(rounded(v, decimals) for v in value)
    return value
