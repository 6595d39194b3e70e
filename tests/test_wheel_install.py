"""A tool one installs: a wheel built from the sources, installed (not editable) into a fresh venv, runs
`ragcourse eval` on a small folder with its cache in the user's cache folder, never in the checkout.

Nothing is downloaded: the wheel is built without build isolation (`--no-index`), the fresh venv sees the
test environment's packages (torch, the embedder's wheel) through a path file, and the package itself
comes only from the wheel. The sources are copied first, so the build writes nothing into the checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

from ragcourse.paths import ROOT

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


def run(cmd, **kwargs):
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, **kwargs)
    assert done.returncode == 0, f"{cmd}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv with ragcourse installed from a wheel built from a copy of the sources."""
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("not running from a checkout: no sources to build a wheel from")
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--wheel-dir",
         str(root / "dist"), str(source)], env=env, cwd=root)
    wheel = next((root / "dist").glob("ragcourse-*.whl"))
    target = root / "venv"
    venv.EnvBuilder(with_pip=False).create(target)
    python = target / "bin" / "python"
    site = Path(run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    env=env).stdout.strip())
    (site / "test-environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index", str(wheel)],
        env=env, cwd=root)
    return root, target, env


def test_the_installed_package_runs_eval_with_its_cache_outside_the_checkout(installed):
    root, target, env = installed
    docs = root / "docs"
    docs.mkdir()
    (docs / "lantern.rst").write_text(DOC, encoding="utf-8")
    (root / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    env = dict(env, HOME=str(root / "home"), XDG_CACHE_HOME=str(root / "xdg"), RAGCOURSE_PROGRESS="0")
    env.pop("RAGCOURSE_CACHE", None)
    where = run([str(target / "bin" / "python"), "-c", "import ragcourse; print(ragcourse.__file__)"],
                env=env, cwd=root).stdout.strip()
    assert Path(where).is_relative_to(target) and not Path(where).is_relative_to(ROOT)
    done = run([str(target / "bin" / "ragcourse"), "eval", "docs", "--questions", "q.jsonl", "--methods", "dense",
                "--out", "report"], env=env, cwd=root)
    results = json.loads((root / "report" / "results.json").read_text(encoding="utf-8"))
    assert results["corpus"]["documents"] == 1 and results["corpus"]["sections"] == 1
    assert results["runs"][0]["queries"] == 3
    cache = root / "xdg" / "ragcourse" / "embeddings"
    assert len(list(cache.glob("*.npz"))) == 1, done.stdout  # the user cache folder (platformdirs, XDG)
    assert f"embeddings cached in {root / 'xdg' / 'ragcourse'}" in done.stdout
    assert not list(target.rglob("embeddings")) and not list((root / "report").rglob("*.npz"))  # nowhere else
