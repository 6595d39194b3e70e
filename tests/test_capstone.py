"""The capstone's automatic checks (kit/capstone.py) on small submissions built here as git repositories."""

from __future__ import annotations

import hashlib
import json
import subprocess

import pytest

from kit.capstone import check

PREREG = "# Pre-registration\nHypothesis: hybrid beats dense on MRR.\n"
REPORT = "Hybrid MRR 0.612 against dense 0.580 (p = 0.0412).\n"
RESULTS = {"runs": {"E/hybrid": {"mrr": 0.61234}, "E/dense": {"mrr": 0.58021}}, "tests": [{"p": 0.04117}]}


def _git(folder, *args):
    subprocess.run(["git", "-C", str(folder), *args], check=True, capture_output=True)


def _commit(folder, message):
    _git(folder, "add", "-A")
    _git(folder, "-c", "user.name=s", "-c", "user.email=s@example.org", "commit", "-qm", message)


def _submission(tmp_path, results_first=False, report=REPORT, edit_after=False):
    folder = tmp_path / "sub"
    folder.mkdir()
    _git(folder, "init", "-q")
    (folder / "questions-topic.jsonl").write_text('{"id": "t1", "question": "Why?", "needle": "Because."}\n')

    def prereg():
        (folder / "preregistration.md").write_text(PREREG)
        digest = hashlib.sha256(PREREG.encode()).hexdigest()
        (folder / "preregistration.sha256").write_text(f"{digest}  preregistration.md\n")
        _commit(folder, "pre-registration")

    def results():
        target = folder / "results/results.json"  # the folder `ragcourse eval --out results` writes
        target.parent.mkdir()
        target.write_text(json.dumps(RESULTS))
        (folder / "report.md").write_text(report)
        _commit(folder, "results")

    for step in ((results, prereg) if results_first else (prereg, results)):
        step()
    if edit_after:
        (folder / "preregistration.md").write_text(PREREG + "Margin: 0.02 (added later).\n")
    return folder


def test_a_submission_in_order_passes(tmp_path):
    assert all(f.ok for f in check(_submission(tmp_path)))


def test_results_committed_before_the_preregistration_fail(tmp_path):
    found = {f.check: f for f in check(_submission(tmp_path, results_first=True))}
    assert not found["pre-registration first"].ok


def test_a_preregistration_edited_after_its_hash_fails(tmp_path):
    found = {f.check: f for f in check(_submission(tmp_path, edit_after=True))}
    assert not found["pre-registration unchanged"].ok


def test_a_number_the_results_do_not_hold_is_named(tmp_path):
    found = {f.check: f for f in check(_submission(tmp_path, report="Hybrid MRR 0.650.\n"))}
    assert not found["report numbers"].ok and "0.650" in found["report numbers"].detail


@pytest.mark.parametrize("name", ["report.md", "preregistration.sha256"])
def test_a_missing_file_is_named(tmp_path, name):
    folder = _submission(tmp_path)
    (folder / name).unlink()
    found = check(folder)
    assert not found[0].ok and name in found[0].detail


def test_the_preregistration_template_asks_for_every_item_the_capstone_grades():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "book" / "preregistration.md").read_text(encoding="utf-8")
    for item in ("Hypothesis", "Primary measure", "k", "Test", "α", "Margin", "Stopping rule", "sha256sum"):
        assert item in text, item
