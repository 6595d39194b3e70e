"""What each chapter costs to run: wall time, CPU time and peak memory, each notebook run once (`make run-costs`).

Executes the notebooks one after another, in book order, with one vector cache that starts empty (a
reader's first pass through the book), each in its own `jupyter nbconvert --execute` process whose
resource usage (its kernel included) is read with `os.wait4`. The load average is recorded beside each
figure, since the machine may be busy. The outputs go to a temporary folder: nothing in the clone changes
but the "notebooks" section of benchmarks/results/timings.json, written after each notebook.

    python scripts/notebook_costs.py notebooks/01-corpus.ipynb ... [--out benchmarks/results/timings.json]
"""

from __future__ import annotations

import argparse
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


def execute(notebook: Path, out_dir: Path, env: dict) -> dict:
    """Run one notebook to its end in a child process; its wall and CPU seconds and peak RSS (kernel included)."""
    cmd = [sys.executable, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
           "--ExecutePreprocessor.kernel_name=python3", "--ExecutePreprocessor.timeout=3600",
           "--output-dir", str(out_dir), str(notebook)]
    before = loadavg()
    started = time.perf_counter()
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"{notebook} failed:\n{child.stderr.read().decode()[-3000:]}")
    return {"wall_s": round(wall, 1), "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "peak_rss_mib": round(usage.ru_maxrss / 1024), "load_average_before": before,
            "load_average_after": loadavg()}


def page_key(notebook: Path) -> str:
    """The page's path under notebooks/, without the suffix: `03-dense-retrieval`, `labs/03-lab`."""
    parts = notebook.resolve().with_suffix("").parts
    if "notebooks" not in parts:
        return notebook.stem
    return "/".join(parts[len(parts) - parts[::-1].index("notebooks"):])


def save(out: Path, section: dict) -> None:
    """Write the "notebooks" section into the timing record, keeping every other section."""
    record = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    record["notebooks"] = section | {"scope": sorted(section["pages"])}  # what the record covers so far
    out.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, default=TIMINGS_FILE)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="ragcourse-costs-"))
    env = dict(os.environ, RAGCOURSE_CACHE=str(work / "cache"), RAGCOURSE_PROGRESS="0")
    section = {"setup": SETUP, "pages": {},
               "cache": "empty before the first notebook, kept from one notebook to the next",
               "machine": machine()}
    try:
        for notebook in args.notebooks:
            print(f">> {notebook}", flush=True)
            key = page_key(notebook)
            section["pages"][key] = execute(notebook, work / "out", env)
            save(args.out, section)
            print(json.dumps(section["pages"][key]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
