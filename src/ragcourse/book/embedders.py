"""Chapter 3's recorded run of three embedders on strategy E, read back and checked against the corpus.

`benchmarks/embedders.py` (`make embedders`) encodes strategy E's chunks and every query with
all-MiniLM-L6-v2, multilingual-e5-small (4-bit) and all-mpnet-base-v2 on one thread, and stores each query's
first-hit rank, the cost and the memory in `benchmarks/results/embedders.json`. No chapter runs the two
extra models: the lab reads this record with `load`, which refuses a record made from other chunks or
other queries, and `per_query` turns its ranks into `evaluation.evaluate`'s table. What it leaves out:
the recording itself, which lives in the benchmark script.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..dense import texts_sha256
from ..evaluation import KS, from_ranks
from ..models import StaleRunError
from ..paths import RESULTS_DIR

RUN_FILE = RESULTS_DIR / "embedders.json"
#: The three embedders, the book's own first.
EMBEDDERS = ("MiniLM", "e5-small", "mpnet")
STRATEGY = "E"


def queries_sha256(queries: Iterable[Any]) -> str:
    """One digest of a query set: each query's id, text and needle, in order.

    >>> from types import SimpleNamespace as Q
    >>> queries_sha256([Q(id="q1/doc", text="t", needle="n")]) == texts_sha256(["q1/doc\\tt\\tn"])
    True
    """
    return texts_sha256(f"{q.id}\t{q.text}\t{q.needle}" for q in queries)


def fingerprint(chunk_texts: Sequence[str], queries: Sequence[Any]) -> dict:
    """What a run is checked against: the strategy, how many chunks and queries, and their digests."""
    return {"strategy": STRATEGY, "chunks": len(chunk_texts), "chunks_sha256": texts_sha256(chunk_texts),
            "queries": len(queries), "queries_sha256": queries_sha256(queries)}


def differences(record: dict, expected: dict) -> list[str]:
    """Why a stored record does not match `expected` (a `fingerprint`); empty when it does.

    >>> differences({"chunks": 3, "strategy": "E"}, {"chunks": 4, "strategy": "E"})
    ['chunks is 3, expected 4']
    """
    return [f"{key} is {record.get(key)!r}, expected {value!r}" for key, value in expected.items()
            if record.get(key) != value]


def load(chunk_texts: Sequence[str], queries: Sequence[Any], path: Path = RUN_FILE) -> dict:
    """The stored run, after checking it was made from these chunks and queries with all three embedders."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: record it with `make embedders` (about 15 minutes, one thread)")
    record = json.loads(path.read_text(encoding="utf-8"))
    wrong = differences(record, fingerprint(chunk_texts, queries))
    missing = [name for name in EMBEDDERS if name not in record.get("embedders", {})]
    if wrong or missing:
        raise StaleRunError(f"{path} does not match the corpus: {'; '.join(wrong + [f'no {m}' for m in missing])}. "
                            "Record it again with `make embedders`.")
    return record


def per_query(record: dict, name: str, queries: Sequence[Any], ks: Sequence[int] = KS) -> pd.DataFrame:
    """One embedder's `evaluate` table (rank, hit@k, rr per query) from the stored ranks."""
    return from_ranks(record["embedders"][name]["ranks"], queries, ks=ks)
