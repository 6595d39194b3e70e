"""The chunk store: what every retriever ranks over (chapters 3, 4 and 8).

A `Store` holds one strategy's chunks, one unit vector per chunk, the BM25 statistics of the same
texts, and the `Stamp` of what built them (embedding model and dimension, strategy, chunker version,
tokenizer pattern, package version). `pipeline.build` makes one from the course corpus (and so does
`ragcourse eval` from a reader's folder, through it); an index saved by `ragcourse index` is read back
as one (`index.Index.store`). `pipeline.Retriever.over` ranks over any store, so the book's pipeline
and `ragcourse query` on a saved index rank the same way.

Leaves out: embedding (`dense.Embedder`), ranking (`pipeline`) and saving (`index_format`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import __version__
from .bm25 import BM25, TOKEN_PATTERN
from .chunking import PIPELINE_VERSION, Chunk

#: A row whose L2 norm is this close to 1 is a unit vector already, and is kept bit for bit.
UNIT_TOLERANCE = 1e-5


class ZeroVectorError(ValueError):
    """An embedder returned a vector of zeros: it has no direction, so no cosine can be computed."""


@dataclass(frozen=True)
class Stamp:
    """What built a store: the embedder (name, dimension), the strategy, and the versions of the chunker,
    the tokenizer and the package."""

    model: str
    dim: int
    strategy: str
    chunker: str = PIPELINE_VERSION
    tokenizer: str = TOKEN_PATTERN
    package: str = __version__


def unit_rows(vectors: np.ndarray, n: int, dim: int) -> np.ndarray:
    """`vectors` as float32 rows of length 1, after checking their shape (n, dim); rows that are unit vectors
    already are kept as they are, so a store of an embedder's output ranks exactly as that output does.

    >>> unit_rows(np.array([[3.0, 4.0], [1.0, 0.0]]), 2, 2).tolist()
    [[0.6000000238418579, 0.800000011920929], [1.0, 0.0]]
    """
    vectors = np.asarray(vectors, dtype=np.float32)
    if vectors.shape != (n, dim):
        raise ValueError(f"vectors of shape {vectors.shape}; expected ({n}, {dim}) for {n} texts at dim={dim}")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ZeroVectorError(f"the embedder returned a zero vector for text {int(np.argmax(norms[:, 0] == 0))}")
    return np.where(np.abs(norms - 1) <= UNIT_TOLERANCE, vectors, vectors / norms).astype(np.float32)


@dataclass(frozen=True, eq=False)
class Store:
    """One strategy's chunks, their unit vectors (row i is chunk i's `text`), BM25 over the same texts, and the
    stamp of what built them."""

    chunks: tuple[Chunk, ...]
    vectors: np.ndarray
    bm25: BM25
    stamp: Stamp

    @classmethod
    def of(cls, chunks: Sequence[Chunk], vectors: np.ndarray, stamp: Stamp) -> Store:
        """A store of `chunks` and their vectors (checked, made unit), with BM25 statistics of their texts."""
        rows = unit_rows(vectors, len(chunks), stamp.dim)
        return cls(tuple(chunks), rows, BM25([c.text for c in chunks]), stamp)
