"""How many: the one check of a count a caller gives (top k, a shortlist's depth, a search's breadth).

Every function and command that keeps the first k of something reads its k through `check_k`, so a bad
count is refused with the same message everywhere (chapters 3-6, appendix 2 and the command line).
Leaves out: upper bounds (a k above the number of chunks keeps them all).
"""

from __future__ import annotations

import numpy as np


def check_k(k: int, name: str = "k") -> int:
    """`k` as an int when it is an integer >= 1 (how many to keep); otherwise ValueError naming it.

    >>> check_k(-1)
    Traceback (most recent call last):
    ...
    ValueError: k=-1: expected an integer >= 1
    >>> check_k(4)
    4
    """
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"{name}={k!r}: expected an integer >= 1")
    return int(k)
