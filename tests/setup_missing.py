"""What a test needs from the set-up (the built book, chromium, the Sphinx docs, the wheelhouse): one rule.

A bare `pytest` skips, saying what is missing; `make test` sets the variable (RAGCOURSE_REQUIRE_BOOK=1,
RAGCOURSE_REQUIRE_SPHINX_DOCS=1, RAGCOURSE_REQUIRE_WHEELHOUSE=1), and there the same absence fails.
"""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

BOOK = "RAGCOURSE_REQUIRE_BOOK"
SPHINX_DOCS = "RAGCOURSE_REQUIRE_SPHINX_DOCS"
WHEELHOUSE = "RAGCOURSE_REQUIRE_WHEELHOUSE"


def missing(message: str, variable: str = BOOK, module: bool = False) -> NoReturn:
    """Fail with `message` when `variable` is 1 (`make test`), else skip (the whole module when `module`)."""
    if os.environ.get(variable) == "1":
        pytest.fail(message, pytrace=False)
    pytest.skip(message, allow_module_level=module)
