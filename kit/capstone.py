"""The capstone's automatic checks (chapter 12, "Your own documents"): what a grader can check without reading.

A submission is a git repository holding `preregistration.md` and `preregistration.sha256` (what `sha256sum
preregistration.md` prints), at least one questions file `questions*.jsonl`, the folder `ragcourse eval` wrote
(`results/results.json`) and `report.md`. Checked: the files exist; the pre-registration is unchanged since its
hash was recorded, and the commit that recorded it comes before the first commit holding the results; every
number with a decimal point in `report.md` is a number of `results.json` (rounded as the report rounds it).
The rubric in the instructor guide scores the rest by reading. `python -m kit.capstone FOLDER` prints one line
per check and exits 1 when one fails.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

REQUIRED = ("preregistration.md", "preregistration.sha256", "report.md", "results/results.json")
DECIMAL = re.compile(r"(?<![\w.])-?\d+\.\d+(?!\w)(?!\.\d)")


class Finding(NamedTuple):
    """One check's outcome: its name, whether it passed, and what was found."""

    check: str
    ok: bool
    detail: str


def numbers_in(value: object) -> list[float]:
    """Every number in a JSON value, depth first.

    >>> numbers_in({"a": [1, 0.25, {"b": "x", "c": 0.5}], "d": True})
    [1.0, 0.25, 0.5]
    """
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return []
    if isinstance(value, int | float):
        return [float(value)]
    items = value.values() if isinstance(value, dict) else value
    return [n for item in items for n in numbers_in(item)]


def unmatched_numbers(report: str, results: object) -> list[str]:
    """The decimals written in `report` that no number of `results` gives when rounded to as many places.

    >>> unmatched_numbers("MRR 0.583 against 0.42 (p = 0.0312)", {"mrr": [0.58312, 0.4199], "p": 0.03121})
    []
    >>> unmatched_numbers("MRR 0.600", {"mrr": 0.583})
    ['0.600']
    """
    known = numbers_in(results)
    out = []
    for text in DECIMAL.findall(report):
        places = len(text.split(".")[1])
        if not any(round(n, places) == round(float(text), places) for n in known):
            out.append(text)
    return out


def _git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(folder), *args], capture_output=True, text=True, check=True).stdout


def _first_commit(folder: Path, path: str) -> str | None:
    """The oldest commit that adds `path`, or None."""
    found = _git(folder, "log", "--diff-filter=A", "--format=%H", "--", path).split()
    return found[-1] if found else None


def precedes(folder: Path) -> Finding:
    """The recorded hash is the pre-registration's, and it was committed before the results first were."""
    recorded = (folder / "preregistration.sha256").read_text(encoding="utf-8").split()
    actual = hashlib.sha256((folder / "preregistration.md").read_bytes()).hexdigest()
    if not recorded or recorded[0] != actual:
        return Finding("pre-registration unchanged", False, "preregistration.md does not match its recorded sha256")
    try:
        before, after = _first_commit(folder, "preregistration.sha256"), _first_commit(folder, "results/results.json")
    except (subprocess.CalledProcessError, FileNotFoundError):
        return Finding("pre-registration first", False, "not a git repository: the order cannot be checked")
    if before is None or after is None:
        return Finding("pre-registration first", False, "the hash or the results were never committed")
    first = subprocess.run(["git", "-C", str(folder), "merge-base", "--is-ancestor", before, after]).returncode == 0
    return Finding("pre-registration first", first and before != after,
                   f"hash committed in {before[:10]}, results in {after[:10]}")


def check(folder: str | Path) -> list[Finding]:
    """Every automatic check of one submission, in order; later checks are skipped when files are missing."""
    folder = Path(folder)
    missing = [name for name in REQUIRED if not (folder / name).is_file()]
    questions = sorted(folder.glob("questions*.jsonl"))
    found = [Finding("files", not missing and bool(questions),
                     f"missing {missing + ([] if questions else ['questions*.jsonl'])}" if missing or not questions
                     else "all there")]
    if missing:
        return found
    found.append(precedes(folder))
    results = json.loads((folder / "results/results.json").read_text(encoding="utf-8"))
    stray = unmatched_numbers((folder / "report.md").read_text(encoding="utf-8"), results)
    found.append(Finding("report numbers", not stray, f"not in results.json: {stray[:5]}" if stray else "all found"))
    return found


def main(argv: list[str] | None = None) -> int:
    """Print each check of the folder given; exit 1 when one fails."""
    findings = check((argv or sys.argv[1:])[0])
    for f in findings:
        print(f"{'ok  ' if f.ok else 'FAIL'} {f.check}: {f.detail}")
    return 0 if all(f.ok for f in findings) else 1


if __name__ == "__main__":
    raise SystemExit(main())
