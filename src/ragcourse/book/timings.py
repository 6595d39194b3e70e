"""The one recorded timing run the book quotes, and the description of the machine it ran on (chapters 3-8).

Wall-clock times depend on the machine and on what else it is doing, so no chapter times itself:
`benchmarks/timings.py` (`make timings`) measures every step once, on a quiet machine, and writes
`benchmarks/results/timings.json`; the chapters read it with `load`. What it leaves out: the
measuring itself, which lives in the benchmark script, beside the other benchmarks.
"""

from __future__ import annotations

import json
import os
import platform
from datetime import date
from importlib import metadata
from pathlib import Path

from ..paths import RESULTS_DIR

TIMINGS_FILE = RESULTS_DIR / "timings.json"


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, or what `platform` knows elsewhere."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine() -> dict:
    """What a timing depends on: CPU, cores, memory, Python and the numeric libraries, and the date."""
    versions = {name: metadata.version(name) for name in ("torch", "numpy", "sentence-transformers")}
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        pages = 0
    from .. import models

    return {"cpu": cpu_model(), "cores": os.cpu_count(), "memory_gib": round(pages / 2**30),
            "python": platform.python_version(), "torch_threads": models.TORCH_THREADS,
            "versions": versions, "date": date.today().isoformat()}


def load(path: Path = TIMINGS_FILE) -> dict:
    """The recorded run; a clear error when it is missing (`make timings` writes it)."""
    if not Path(path).is_file():
        raise FileNotFoundError(f"{path} not found: run `make timings` on a quiet machine to record it")
    return json.loads(Path(path).read_text(encoding="utf-8"))


def describe(record: dict) -> str:
    """A caption: `'Xeon, 2 cores, 24 GiB, Python 3.11.7, torch 2.13.0 on 2 threads, measured 2026-12-01'`."""
    m = record["machine"]
    return (f"{m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, Python {m['python']}, "
            f"torch {m['versions']['torch']} on {m['torch_threads']} threads, measured {m['date']}")
