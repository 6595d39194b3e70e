"""Shared fixtures (`corpus`, `embedder`) and the network guard for every test.

The test command (`make test`) runs pytest in a network namespace with only loopback up, and with
pytest-socket's flags. As a second line that holds wherever pytest is started, each test item
also gets pytest-socket's connect guard: sockets may reach loopback (the Jupyter kernel talks to
nbval over it) or Unix sockets, and nothing else.
"""

from __future__ import annotations

import os

import pytest

# Not searched for doctests: beside notebooks/conftest.py, `--doctest-modules` would import two `conftest`s.
collect_ignore = ["conftest.py"]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

LOOPBACK = ["127.0.0.1", "::1"]


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Block outside connections during every test function (pytest-socket's guard)."""
    from pytest_socket import socket_allow_hosts

    if hasattr(item, "fixturenames"):
        socket_allow_hosts(LOOPBACK, allow_unix_socket=True)


@pytest.fixture(scope="session")
def corpus():
    """The built corpus: `ragcourse.corpus.load_corpus()` (run `make corpus` first)."""
    from ragcourse.corpus import load_corpus

    return load_corpus()


@pytest.fixture(scope="session")
def embedder():
    """The offline sentence-transformers embedder from `ragcourse.models`."""
    from ragcourse.models import load_embedder

    return load_embedder()


@pytest.fixture(scope="session")
def script():
    """`script("diagrams")`: scripts/diagrams.py imported by its path (scripts/ is not a package)."""
    import importlib.util
    from pathlib import Path

    def load(name: str):
        path = Path(__file__).resolve().parents[1] / "scripts" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load


def pytest_collection_finish(session: pytest.Session) -> None:
    """As root, start tests/test_kit_attacks_as_user.py's run as nobody when it is selected, so that it runs beside
    the other tests (it mostly waits on sandboxes and kernels) rather than after them."""
    mine = [item for item in session.items if isinstance(item, pytest.Function)
            and item.nodeid.startswith("tests/test_kit_attacks_as_user.py::")]
    if mine and os.geteuid() == 0 and not session.config.option.collectonly:
        mine[0].module.start()
