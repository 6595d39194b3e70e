"""A tool one installs: the wheel built from the sources, installed into a fresh venv from a local wheelhouse
alone (`--no-index`, offline), runs outside the clone: `ragcourse eval DIR --methods bm25` (importing no torch),
`ragcourse eval DIR` (the embedder from its wheel) and `ragcourse search` (the course's corpus found through
RAGCOURSE_DATA, the one setting for it outside a clone).

The venv does not see the test environment: its packages come from the wheelhouse that `make wheelhouse`
(scripts/wheelhouse.py) builds from the lock once per machine. uv installs them, with its cache in the user
cache folder, so a second run links what the first unpacked. The sources are copied before the build, so
the build writes nothing into the checkout. Without a wheelhouse the test is skipped, unless
RAGCOURSE_REQUIRE_WHEELHOUSE=1 (`make test` sets it), when it fails.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragcourse.paths import ROOT, user_cache_dir
from tests.setup_missing import WHEELHOUSE, missing

sys.path.insert(0, str(ROOT / "scripts"))
import wheelhouse  # noqa: E402

DOC = """Lantern care
============

Trim the wick before every trip so that the flame burns evenly.

Fuel
----

Paraffin lanterns are filled outdoors and left to cool before refilling.
"""
QUESTIONS = [
    {"id": "wick", "needle": "Trim the wick before every trip so that the flame burns evenly.",
     "question": "When should the wick be trimmed?", "ticket": "lantern flame is uneven"},
    {"id": "fill", "needle": "Paraffin lanterns are filled outdoors and left to cool before refilling.",
     "question": "Where are paraffin lanterns filled?"},
]
HEAVY = ("torch", "transformers", "sentence_transformers")
#: `ragcourse ARGS...` run inside the venv's Python, then the heavy modules that were imported, as JSON.
RUN_AND_LIST_IMPORTS = ("import json, sys\nfrom ragcourse.cli import main\nrc = main(sys.argv[1:])\n"
                        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r})))\n"
                        "sys.exit(rc)")


def run(cmd, **kwargs):
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, **kwargs)
    assert done.returncode == 0, f"{cmd}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


def the_wheelhouse() -> Path:
    house = wheelhouse.folder(user_cache_dir() / "wheelhouse")
    if not (house / wheelhouse.DONE).is_file():
        message = f"no wheelhouse at {house}: run `make wheelhouse` (python scripts/wheelhouse.py) first"
        missing(message, WHEELHOUSE)
    return house


def build_wheel(root: Path, env: dict) -> Path:
    source = root / "source"
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir",
         str(root / "dist"), str(source)], env=env, cwd=root)
    return next((root / "dist").glob("ragcourse-*.whl"))


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv (no access to the test environment) with the wheel and its dependencies from the wheelhouse."""
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("not running from a checkout: no sources to build a wheel from")
    house = the_wheelhouse()
    root = tmp_path_factory.mktemp("wheel")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIP_", "UV_"))}
    env |= {"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1", "UV_OFFLINE": "1", "UV_NO_CONFIG": "1",
            "UV_CACHE_DIR": str(user_cache_dir() / "uv"), "UV_LINK_MODE": "hardlink", "RAGCOURSE_PROGRESS": "0"}
    wheel = build_wheel(root, env)
    target = root / "venv"
    uv = [sys.executable, "-m", "uv"]
    run([*uv, "venv", "--no-project", "--python", sys.executable, str(target)], env=env, cwd=root)
    run([*uv, "pip", "install", "--python", str(target / "bin" / "python"), "--no-index", "--find-links", str(house),
         str(wheel)], env=env, cwd=root)
    docs = root / "docs"
    docs.mkdir()
    (docs / "lantern.rst").write_text(DOC, encoding="utf-8")
    (root / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    env = dict(env, HOME=str(root / "home"), XDG_CACHE_HOME=str(root / "xdg"), XDG_DATA_HOME=str(root / "share"))
    env.pop("RAGCOURSE_CACHE", None)
    env.pop("RAGCOURSE_DATA", None)
    return root, target, env


def ragcourse(installed, *args: str, **env) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run `ragcourse ARGS` in the venv, outside the clone: what it printed, and the heavy modules it imported."""
    root, target, base = installed
    done = run([str(target / "bin" / "python"), "-c", RUN_AND_LIST_IMPORTS, *args], env=base | env, cwd=root)
    return done, json.loads(done.stdout.strip().splitlines()[-1])


def test_the_venv_sees_only_its_own_packages(installed):
    root, target, env = installed
    code = "import ragcourse, torch, sys; print(ragcourse.__file__); print(torch.__file__); print(sys.path)"
    done = run([str(target / "bin" / "python"), "-c", code], env=env, cwd=root)
    where, torch_file, path = done.stdout.split("\n")[:3]
    assert Path(where).is_relative_to(target) and Path(torch_file).is_relative_to(target)
    assert sys.prefix not in path and str(ROOT) not in path


def test_a_bm25_only_eval_imports_no_torch_and_caches_nothing(installed):
    root, _, _ = installed
    done, heavy = ragcourse(installed, "eval", "docs", "--questions", "q.jsonl", "--methods", "bm25", "--out", "bm25")
    assert heavy == []
    results = json.loads((root / "bm25" / "results.json").read_text(encoding="utf-8"))
    assert [r["method"] for r in results["runs"]] == ["bm25"] and results["runs"][0]["queries"] == 3
    assert not list((root / "xdg").rglob("*.npz")), done.stdout


def test_eval_with_every_method_embeds_into_the_user_cache(installed):
    root, target, _ = installed
    done, heavy = ragcourse(installed, "eval", "docs", "--questions", "q.jsonl", "--out", "all")
    assert "torch" in heavy and "sentence_transformers" in heavy  # the measurement above can see torch
    results = json.loads((root / "all" / "results.json").read_text(encoding="utf-8"))
    assert results["corpus"]["documents"] == 1 and results["corpus"]["sections"] == 1
    assert {r["method"] for r in results["runs"]} == {"dense", "bm25", "hybrid"}
    cache = root / "xdg" / "ragcourse" / "embeddings"
    assert len(list(cache.glob("*.npz"))) == 1, done.stdout  # the user cache folder (platformdirs, XDG)
    assert not list(target.rglob("embeddings")) and not list((root / "all").rglob("*.npz"))  # nowhere else


def test_search_without_the_setting_says_which_setting(installed):
    root, target, env = installed
    done = subprocess.run([str(target / "bin" / "ragcourse"), "search", "how do I add a caption to a figure"],
                          capture_output=True, text=True, env=env, cwd=root, timeout=600)
    assert done.returncode != 0
    assert "RAGCOURSE_DATA" in done.stderr and "make corpus" in done.stderr, done.stderr[-2000:]


def test_search_finds_the_course_corpus_through_ragcourse_data(installed):
    data = ROOT / "data"
    if not (data / "corpus").is_dir():
        pytest.skip("the course corpus is not built here (make corpus)")
    done, _ = ragcourse(installed, "search", "how do I add a caption to a figure", "-k", "2",
                        RAGCOURSE_DATA=str(data), RAGCOURSE_CACHE=str(data / "cache"))
    hits = [line for line in done.stdout.splitlines() if re.match(r"\[\d+\] d=", line)]
    assert [h.split("]")[0] for h in hits] == ["[1", "[2"] and all("#char=" in h for h in hits), done.stdout
