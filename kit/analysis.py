"""The grader's own reading of one submission, in a child process under time and memory limits.

Parsing the notebook, cutting each function's statements from it (kit/definitions.py) and reading
what its sandbox exported all cost what the submission makes them cost: a 61 MB notebook or a 650 KB
cell that is slow to analyse must cost only its own row. `analyse` runs `python -m kit.analysis JOB`
with RLIMIT_AS and RLIMIT_CPU and a wall-clock limit; the child writes the checker's job file (the
answers as data, the functions' sources) and prints a short summary. Past a limit, the summary says
"too large to grade".
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
from pathlib import Path

MEMORY = 3 << 30  # bytes of address space for the child
SECONDS = 120  # CPU and wall-clock seconds for the child
MAX_SUMMARY = 1 << 20  # bytes of summary the grader reads back
ROOT = Path(__file__).resolve().parents[1]
TOO_LARGE = "too large to grade"


def analyse(job: dict, memory: int = MEMORY, seconds: float = SECONDS) -> dict:
    """The child's summary of a submission for `job` (see `main`), or {"readable": False, "why": ...}."""
    from kit.sandbox import package_root

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (int(seconds), int(seconds)))

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(package_root()), str(ROOT)])}
    try:
        done = subprocess.run([sys.executable, "-m", "kit.analysis"], input=json.dumps(job).encode(),
                              capture_output=True, timeout=seconds, env=env, cwd=ROOT,
                              preexec_fn=limit)  # noqa: PLW1509 - limits for the child only
    except subprocess.TimeoutExpired:
        return {"readable": False, "why": f"{TOO_LARGE}: reading it took over {seconds:.0f} s"}
    if done.returncode != 0 or len(done.stdout) > MAX_SUMMARY:
        why = "MemoryError" in done.stderr.decode(errors="replace")[-2000:] or done.returncode < 0
        return {"readable": False, "why": f"{TOO_LARGE}: reading it passed the grader's limits "
                                          f"({memory >> 20} MB, {seconds:.0f} s)" if why else
                                          "the grader could not read this notebook"}
    return json.loads(done.stdout)


def _notebook(path: str):
    import nbformat

    data = Path(path).read_bytes().removeprefix(b"\xef\xbb\xbf")  # a byte-order mark, from another editor
    return nbformat.reads(data.decode("utf-8"), as_version=4)


def untouched(nb, stubs: dict[str, str]) -> list[str]:
    """Exercise ids whose answer cell is still the stub handed out (whitespace aside)."""
    from kit.runner import exercise_meta
    from ragcourse.words import collapse

    found = []
    for cell in nb.cells:
        meta = exercise_meta(cell) if cell.cell_type == "code" else None
        if isinstance(meta, dict) and stubs.get(str(meta.get("id"))) == collapse(str(cell.source)):
            found.append(str(meta.get("id")))
    return found


def _handed_variant(nb):
    meta = nb.metadata.get("ragcourse") if isinstance(nb.metadata, dict) else None
    handed = meta.get("variant") if isinstance(meta, dict) else None
    return handed if isinstance(handed, int) and not isinstance(handed, bool) else None


def _exported(path: str | None) -> dict:
    """What the sandbox printed, read as JSON (bare NaN refused); {} when there is nothing readable."""
    from kit.codec import _refuse

    if not path:
        return {}
    try:
        result = json.loads(Path(path).read_bytes().decode("utf-8"), parse_constant=_refuse)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return {"notes": ["the notebook's run ended without a readable result (did it kill its runner?)"]}
    return result if isinstance(result, dict) else {"notes": ["the notebook's run gave an unreadable result"]}


def _program(definitions, sources: list[str], name: str) -> list[str]:
    try:
        return definitions.program(sources, name)
    except RecursionError:  # an expression nested past what Python can write back: the function is not found
        return []


def main(job: dict) -> dict:
    """Read the notebook and its export; write the checker's job (answers, functions) to job["out"]."""
    from kit import definitions

    try:
        nb = _notebook(job["notebook"])
        sources = [c.source for c in nb.cells if c.cell_type == "code" and isinstance(c.source, str)]
    except Exception as err:  # noqa: BLE001 - not a notebook at all
        return {"readable": False, "why": f"not a readable notebook ({type(err).__name__})"}
    result = _exported(job.get("result"))
    exported = result.get("exported") if isinstance(result.get("exported"), dict) else {}
    values = exported.get("values")
    summary = {"readable": True, "untouched": untouched(nb, job["stubs"]), "handed_variant": _handed_variant(nb),
               "notes": [str(n)[:300] for n in result.get("notes", [])[:50]] if isinstance(result.get("notes"), list)
               else [], "not_attempted": [str(x)[:20] for x in result.get("not_attempted", [])[:200]
                                          if isinstance(x, str)], "has_values": isinstance(values, dict)}
    if isinstance(exported.get("environment"), dict):
        summary["environment"] = {str(k)[:40]: str(v)[:80] for k, v in list(exported["environment"].items())[:40]}
    if isinstance(exported.get("variant"), str):
        summary["exported_variant"] = exported["variant"][:20]
    # only the answer cells' names: a forged export of 2 million names would cost a parse of the notebook each
    names = set(job["names"])
    values = {name: v for name, v in values.items() if name in names} if isinstance(values, dict) else {}
    functions = {name: _program(definitions, sources, name) for name, v in values.items()
                 if isinstance(v, dict) and v.get("$t") == "function"}
    Path(job["out"]).write_text(json.dumps({"values": values, "functions": functions, "unsafe": job["unsafe"],
                                            "check_seconds": job["check_seconds"]}), encoding="utf-8")
    return summary


if __name__ == "__main__":
    sys.stdout.write(json.dumps(main(json.loads(sys.stdin.read()))))
