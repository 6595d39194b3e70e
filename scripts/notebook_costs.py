"""What each notebook page costs to run: wall time, CPU time and peak memory, each notebook run once (`make run-costs`).

Each notebook runs in its own `jupyter nbconvert --execute` process, from a vector cache of its own that starts
empty: what a reader pays who downloads that one page into a fresh clone after `make install corpus` (a reader
who ran earlier chapters first pays less). Its resource usage, kernel included, is read with `os.wait4`, and the
load average before and after is recorded beside it, since the machine may be busy. The outputs go to a
temporary folder: nothing in the clone changes but the "notebooks" section of benchmarks/results/timings.json,
one row per page, written after each notebook, with the sha256 of the notebook's code cells.

By default only the pages with no row, or whose code changed since their row, are run (after a merge: the
changed chapters); --all runs every page given, --list only prints which pages would run.

    python scripts/notebook_costs.py [--all | --list] notebooks/01-corpus.ipynb ... [--out FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from ragcourse.book.timings import TIMINGS_FILE, machine  # noqa: E402

SETUP = "make install corpus"


def loadavg() -> list[float]:
    """The 1, 5 and 15 minute load averages (empty where /proc is missing)."""
    try:
        return [float(x) for x in Path("/proc/loadavg").read_text().split()[:3]]
    except OSError:
        return []


def code_sha256(notebook: Path) -> str:
    """The sha256 of the notebook's code cells, in order: what its cost depends on (prose edits do not count)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    sources = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
               for c in cells if c["cell_type"] == "code"]
    return hashlib.sha256("\n\0".join(sources).encode("utf-8")).hexdigest()


def execute(notebook: Path, work: Path) -> dict:
    """Run one notebook to its end in a child process, from an empty vector cache; its wall and CPU seconds and
    peak RSS (kernel included)."""
    cmd = [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
           "--ExecutePreprocessor.kernel_name=python3", "--ExecutePreprocessor.timeout=3600",
           "--output-dir", str(work / "out"), str(notebook)]
    env = dict(os.environ, RAGCOURSE_CACHE=str(work / "cache"), RAGCOURSE_PROGRESS="0")
    before = loadavg()
    started = time.perf_counter()
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"{notebook} failed:\n{child.stderr.read().decode()[-3000:]}")
    return {"wall_s": round(wall, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_rss_mib": round(usage.ru_maxrss / 1024), "load_average_before": before,
            "load_average_after": loadavg(), "cache": "empty", "machine": machine(),
            "code_sha256": code_sha256(notebook)}


def page_key(notebook: Path) -> str:
    """The page's path under notebooks/, without the suffix: `03-dense-retrieval`, `labs/03-lab`."""
    parts = notebook.resolve().with_suffix("").parts
    if "notebooks" not in parts:
        return notebook.stem
    return "/".join(parts[len(parts) - parts[::-1].index("notebooks"):])


def read_section(out: Path) -> dict:
    """The record's "notebooks" section ({} when there is none yet)."""
    record = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    return record.get("notebooks", {})


def save(out: Path, key: str, row: dict) -> None:
    """Write one page's row into the timing record, keeping every other page and every other section."""
    record = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    section = record.get("notebooks", {})
    pages = section.get("pages", {}) | {key: row}
    record["notebooks"] = {"setup": SETUP, "pages": pages, "scope": sorted(pages)}
    out.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def to_run(notebooks: list[Path], section: dict, everything: bool = False) -> list[Path]:
    """The notebooks with no row, or whose code changed since their row (all of them with `everything`)."""
    pages = section.get("pages", {})
    return [nb for nb in notebooks if everything or
            pages.get(page_key(nb), {}).get("code_sha256") != code_sha256(nb)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=TIMINGS_FILE)
    parser.add_argument("--all", action="store_true", help="run every notebook given, recorded or not")
    parser.add_argument("--list", action="store_true", help="only print the notebooks that would run")
    args = parser.parse_args(argv)
    pending = to_run(args.notebooks, read_section(args.out), args.all)
    if args.list or not pending:
        print("\n".join(map(str, pending)) or "every page's row matches its notebook's code")
        return 0
    for notebook in pending:
        print(f">> {notebook}", flush=True)
        work = Path(tempfile.mkdtemp(prefix="ragcourse-costs-"))
        try:
            row = execute(notebook, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        save(args.out, page_key(notebook), row)
        print(json.dumps({k: v for k, v in row.items() if k != "machine"}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
