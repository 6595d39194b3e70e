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
#: The dense systems of `scale.json` (appendix A2), as the book names them, and each one's key in a size's row.
SCALE_SYSTEMS = (("exact scan", "scratch"), ("HNSW (faiss)", "ann"), ("Qdrant, local mode", "engine"))


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


def scale_rows(record: dict) -> list[dict]:
    """One row per size and dense system of `scale.json` (`benchmarks/bench_scale.py`): chunks, system, build (s),
    query (ms) and memory (MiB).

    >>> size = {"build_s": 1.5, "dense_ms": 0.25, "memory_mib": 3}
    >>> scale_rows({"scale": [{"texts": 10, "scratch": size, "ann": size, "engine": size}]})[0]
    {'chunks': 10, 'system': 'exact scan', 'build (s)': 1.5, 'query (ms)': 0.25, 'memory (MiB)': 3}
    """
    return [{"chunks": r["texts"], "system": name, "build (s)": r[key]["build_s"], "query (ms)": r[key]["dense_ms"],
             "memory (MiB)": r[key]["memory_mib"]} for r in record["scale"] for name, key in SCALE_SYSTEMS]
