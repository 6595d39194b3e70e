"""Glue: how a number leaves a notebook for the book's prose, rounded at the source (`ragcourse.precision`)."""

from __future__ import annotations

from typing import Any

from ..precision import PUBLISHED, rounded


def glue(name: str, value: Any, decimals: int = PUBLISHED, display: bool = False) -> None:
    """Store `value`, rounded to `decimals` places, for the book's `{glue}` roles (myst-nb's glue).

    Returns None, like myst-nb's glue, so a cell that ends with it shows no output.
    """
    from myst_nb import glue as myst_glue

    myst_glue(name, rounded(value, decimals), display=display)
