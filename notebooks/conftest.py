"""nbval runs each chapter; one more item after its last cell grades it with the instructor's kit.

The item ("kit self-test", `kit/selftest.py`) runs in the kernel nbval used, so the chapter is
executed once for both checks: its stored outputs (nbval) and its exercises (the kit).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))  # kit/ is not installed: it is imported from the repository's root

from kit.selftest import checks_for, selftest  # noqa: E402

# Not a module to search for doctests: `--doctest-modules tests notebooks` would import it a second time,
# as `conftest`, beside tests/conftest.py.
collect_ignore = ["conftest.py"]


class KitSelfTest(pytest.Item):
    """The reference answers score full marks and the untouched student edition 0, in nbval's kernel."""

    def runtest(self) -> None:
        kernel = getattr(self.parent, "kernel", None)
        if kernel is None or not kernel.is_alive():
            raise AssertionError("nbval's kernel for this notebook is not running")
        problems = selftest(kernel, Path(self.parent.path))
        assert not problems, "\n".join(problems)


def pytest_collection_modifyitems(session, config, items) -> None:
    """After the last nbval cell of each chapter with hidden checks, a `kit self-test` item.

    `RAGCOURSE_KIT_SELFTEST=0` leaves it out: `make test`'s second nbval pass (older CPU kernels) checks
    the chapters' numbers again, and grading was already checked in the first.
    """
    if not config.getoption("nbval", default=False) and not config.getoption("nbval_lax", default=False):
        return
    if os.environ.get("RAGCOURSE_KIT_SELFTEST", "1") == "0":
        return
    last: dict[object, int] = {}
    for position, item in enumerate(items):
        parent = item.parent
        if type(parent).__name__ == "IPyNbFile" and checks_for(Path(parent.path)) is not None:
            last[parent] = position
    for parent, position in sorted(last.items(), key=lambda kv: -kv[1]):
        items.insert(position + 1, KitSelfTest.from_parent(parent, name="kit self-test"))
