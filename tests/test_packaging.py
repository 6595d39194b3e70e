"""The package's metadata: one version, a PEP 639 licence, a build with no deprecation warning.

`python -m build --no-isolation` builds the sdist and the wheel from a copy of the sources, offline (the
test environment has the capped setuptools), so nothing is written into the checkout.
"""

from __future__ import annotations

import email
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from pathlib import Path

import pytest
import yaml

import ragcourse
from ragcourse.paths import ROOT

SOURCES = ("src", "pyproject.toml", "README.md", "LICENSE")


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def copy_sources(target: Path) -> Path:
    """The files a build reads, copied, so that the build's egg-info and build/ stay out of the checkout."""
    for name in SOURCES:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, target / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy(ROOT / name, target / name)
    return target


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The sdist and wheel built by `python -m build --no-isolation`, and everything the build printed."""
    if not (ROOT / "pyproject.toml").is_file():
        pytest.skip("not running from a checkout")
    root = tmp_path_factory.mktemp("build")
    source = copy_sources(root / "source")
    env = dict(os.environ, PIP_NO_INDEX="1", PYTHONWARNINGS="default")
    env.pop("PYTHONPATH", None)
    done = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(root / "dist"),
                           str(source)], capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    return root / "dist", done.stdout + done.stderr


def test_the_build_warns_of_no_deprecation(built):
    _, log = built
    warned = [line for line in log.splitlines()
              if re.search(r"deprecat|SetuptoolsWarning|_DeprecatedConfig|!!", line, re.IGNORECASE)]
    assert warned == []


def test_the_wheel_carries_pep_639_licence_metadata_and_the_one_version(built):
    dist, _ = built
    wheel = next(dist.glob("ragcourse-*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        meta = email.message_from_bytes(zf.read(f"ragcourse-{ragcourse.__version__}.dist-info/METADATA"))
        names = zf.namelist()
    assert meta["Version"] == ragcourse.__version__
    assert meta["License-Expression"] == "MIT" and meta.get_all("License-File") == ["LICENSE"]
    assert meta["License"] is None and not [c for c in meta.get_all("Classifier") if c.startswith("License ::")]
    assert f"ragcourse-{ragcourse.__version__}.dist-info/licenses/LICENSE" in names
    assert {c.split(" :: ")[-1] for c in meta.get_all("Classifier") if "Python :: 3." in c} == {"3.11", "3.12", "3.13"}
    assert meta["Requires-Python"] in {">=3.11,<3.14", "<3.14,>=3.11"}


def test_the_sdist_carries_the_licence(built):
    dist, _ = built
    with tarfile.open(next(dist.glob("ragcourse-*.tar.gz"))) as tf:
        assert f"ragcourse-{ragcourse.__version__}/LICENSE" in tf.getnames()


def test_the_version_is_written_once_and_cited_everywhere_it_is_read():
    project = pyproject()["project"]
    assert "version" not in project and project["dynamic"] == ["version"]
    assert pyproject()["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "ragcourse.__version__"}
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["version"] == ragcourse.__version__ and citation["license"] == "MIT"
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert re.search(rf"^## \[{re.escape(ragcourse.__version__)}\] - {citation['date-released']}$", changelog, re.M)


def test_the_build_backend_is_capped_and_admits_the_installed_setuptools():
    from importlib.metadata import version

    from packaging.requirements import Requirement

    (requirement,) = [Requirement(r) for r in pyproject()["build-system"]["requires"]]
    assert requirement.name == "setuptools" and any(s.operator == "<" for s in requirement.specifier)
    assert requirement.specifier.contains(version("setuptools"))


def test_the_licence_file_is_the_mit_licence():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "Permission is hereby granted, free of charge" in text
    assert pyproject()["project"]["license"] == "MIT" and pyproject()["project"]["license-files"] == ["LICENSE"]


def test_the_package_urls_are_the_book_repository_setting():
    """One setting: book/_config.yml's repository.url; pyproject's Source URL, when present, is the same."""
    config = yaml.safe_load((ROOT / "book" / "_config.yml").read_text(encoding="utf-8"))
    url = config["repository"]["url"]
    urls = pyproject()["project"].get("urls", {})
    assert urls == ({"Source": url} if url else {})


def test_the_repository_and_launch_buttons_follow_the_one_setting():
    spec = importlib.util.spec_from_file_location("repository_ext", ROOT / "book" / "_ext" / "repository.py")
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    off = ext.buttons({"repository_url": "", "launch_buttons": {"notebook_interface": "classic"}})
    assert off["use_repository_button"] is False and off["launch_buttons"]["binderhub_url"] == ""
    on = ext.buttons({"repository_url": " https://example.org/r ", "use_repository_button": False})
    assert on["use_repository_button"] is True and on["repository_url"] == "https://example.org/r"
    assert on["launch_buttons"]["binderhub_url"] == "https://mybinder.org"
