"""Dense retrieval: embed chunks and queries with a bi-encoder, search by an exact cosine scan (chapter 3).

The embedder is all-MiniLM-L6-v2 by default (384 dimensions, mean-pooled, L2-normalised), loaded
through `ragcourse.models`. Vectors are cached on disk, keyed by a fingerprint of the model and a
hash of each text, so a rerun (or a later chapter) never embeds the same text twice.

Left out on purpose: approximate nearest-neighbour indexes. At a few thousand chunks an exact
scan is a single matrix-vector product and has no recall loss to explain (`ragcourse.ann` puts an
HNSW graph behind the same interface for larger corpora; appendix 2 measures the crossover).
"""

from __future__ import annotations

import copy
import fcntl
import hashlib
import json
import os
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from . import models
from .chunking import Chunk
from .counts import check_k
from .models import Lazy
from .paths import CACHE_ROOT, cache_folder
from .precision import rounded_scores, stable_order

CACHE_DIR = CACHE_ROOT / "embeddings"


class CacheWarning(UserWarning):
    """The embedding cache file was unreadable and is being rebuilt (its vectors were not used)."""


@dataclass(frozen=True)
class Hit:
    """One retrieved chunk: its cosine distance (1 - cos) to the query, and its rank from 1."""

    chunk: Chunk
    distance: float
    rank: int


def text_key(text: str) -> str:
    """A stable key for one text: the sha256 of its UTF-8 bytes.

    >>> text_key("a")[:8]
    'ca978112'
    """
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def texts_sha256(texts: Iterable[str]) -> str:
    """One digest of many texts, in order: sha256 over their `text_key`s, one a line (an index's stamp, a
    stored run's corpus check).

    >>> texts_sha256(["a"]) == hashlib.sha256(text_key("a").encode()).hexdigest()
    True
    """
    return hashlib.sha256("\n".join(text_key(t) for t in texts).encode()).hexdigest()


@lru_cache(maxsize=8)
def model_fingerprint(source: str) -> str:
    """sha256 over a model folder's config and weight files, so a changed model never reuses vectors."""
    folder = Path(source)
    if not folder.is_dir():  # a hub name: its name is all we know
        return hashlib.sha256(source.encode()).hexdigest()[:16]
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix in {".json", ".safetensors", ".bin", ".txt"}:
            digest.update(path.relative_to(folder).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


#: Work of at least this many items (texts to embed) gets a bar when the caller does not say.
PROGRESS_MIN = 256


def show_progress(requested: bool | None, amount: int = 0) -> bool:
    """The package's one progress-bar switch: never when RAGCOURSE_PROGRESS=0 (the Makefile and notebooks set it,
    so stored outputs never wobble), else `requested`; `requested=None`: a bar only when `amount >= PROGRESS_MIN`."""
    if os.environ.get("RAGCOURSE_PROGRESS") == "0":
        return False
    return requested if requested is not None else amount >= PROGRESS_MIN


@dataclass(init=False)
class Embedder:
    """A sentence-transformers model plus an on-disk vector cache keyed by (model fingerprint, text hash);
    `model` may be a `models.Lazy`, loaded on first use: a run whose vectors are all cached never loads it."""

    name: str
    fingerprint: str
    cache_dir: Path | None = CACHE_DIR
    batch_size: int = 32
    last_stats: dict = field(default_factory=dict)

    def __init__(self, model: object, name: str, fingerprint: str, cache_dir: Path | None = CACHE_DIR,
                 batch_size: int = 32) -> None:
        self._model, self.name, self.fingerprint = model, name, fingerprint
        self.cache_dir, self.batch_size, self.last_stats = cache_dir, batch_size, {}

    @property
    def model(self):
        """The sentence-transformers model (loaded now, if it was lazy)."""
        if isinstance(self._model, Lazy):
            self._model = self._model.load()
        return self._model

    @property
    def dim(self) -> int:
        return int(self.model.get_embedding_dimension())

    def _cache_file(self) -> Path | None:
        return None if self.cache_dir is None else Path(self.cache_dir) / f"{self.fingerprint}.npz"

    def _load_cache(self, warn: bool = True) -> dict[str, np.ndarray]:
        """The cached vectors; a file that cannot be read whole (or holds other shapes) counts as empty."""
        path = self._cache_file()
        if path is None or not path.is_file():
            return {}
        try:
            with np.load(path, allow_pickle=False) as data:
                keys, vectors = data["keys"].tolist(), data["vectors"]
            if vectors.ndim != 2 or len(keys) != len(vectors) or not np.isfinite(vectors).all() \
                    or (not isinstance(self._model, Lazy) and vectors.shape[1] != self.dim):
                raise ValueError(f"{len(keys)} keys for vectors of shape {vectors.shape}")
        except Exception as err:  # a truncated or foreign file: zipfile, numpy and OS errors alike
            if warn:
                warnings.warn(f"embedding cache {path} is corrupt ({type(err).__name__}: {err}); "
                              "ignoring it and rebuilding it with freshly embedded vectors", CacheWarning,
                              stacklevel=3)
            return {}
        return dict(zip(keys, vectors, strict=True))

    def _save_cache(self, new: dict[str, np.ndarray]) -> None:
        """Merge new vectors into the file under a lock, so concurrent runs never drop each other's work."""
        path = self._cache_file()
        if path is None:
            return
        cache_folder(path.parent)  # tagged first: no one takes what it holds for the course's data
        with open(path.with_suffix(".lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            cache = self._load_cache(warn=False) | new
            keys = sorted(cache)
            tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
            np.savez(tmp, keys=np.array(keys), vectors=np.stack([cache[k] for k in keys]))
            os.replace(tmp, path)

    def encode(self, texts: list[str], progress: bool | None = None) -> np.ndarray:
        """Unit vectors, one row per text (float32); only texts missing from the cache are embedded."""
        cache = self._load_cache()
        keys = [text_key(t) for t in texts]
        missing = sorted({k: t for k, t in zip(keys, texts, strict=True) if k not in cache}.items())
        started = time.perf_counter()
        if missing:
            vectors = self.model.encode(
                [t for _, t in missing], batch_size=self.batch_size, convert_to_numpy=True,
                normalize_embeddings=True, show_progress_bar=show_progress(progress, len(missing)),
            )
            new = {k: v.astype(np.float32) for (k, _), v in zip(missing, vectors, strict=True)}
            cache.update(new)
            self._save_cache(new)
        self.last_stats = {"texts": len(texts), "embedded": len(missing),
                           "seconds": time.perf_counter() - started}
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([cache[k] for k in keys])

    def encode_queries(self, queries: list[str]) -> np.ndarray:
        """Query vectors, cached like chunks' but embedded one at a time, as `encode_query` embeds them."""
        one_by_one = copy.copy(self)
        one_by_one.batch_size = 1  # a batch pads its texts, which moves the 7th digit of a query's vector
        return one_by_one.encode(list(queries))

    def encode_query(self, query: str) -> np.ndarray:
        """One query vector, never cached (queries are cheap and timing them is part of the lesson)."""
        return self.model.encode([query], convert_to_numpy=True, normalize_embeddings=True)[0]


def load_embedder(cache_dir: Path | None = CACHE_DIR) -> Embedder:
    """The default embedder (see `ragcourse.models`) wrapped with the vector cache."""
    spec = models.embedder_spec()  # a missing model is reported now, though it loads on first use
    return Embedder(model=Lazy(models.load_embedder), name=spec.name,
                    fingerprint=model_fingerprint(spec.source), cache_dir=cache_dir)


def cosine_distances(vectors: np.ndarray, query: np.ndarray) -> np.ndarray:
    """1 - cos for every row against one query (for unit vectors, 1 - dot product), rounded to 6 places.

    Rounded so that float32 noise from one CPU to another (about 1e-7) cannot decide a rank or a
    gate; see `ragcourse.precision`.
    """
    return rounded_scores(1.0 - vectors @ query)


def order(distances: np.ndarray) -> np.ndarray:
    """Positions sorted by distance, ties broken by position.

    >>> order([0.2, 0.1, 0.2]).tolist()
    [1, 0, 2]
    """
    return stable_order(distances)


def top_hits(chunks: Sequence[Chunk], distances: np.ndarray, k: int,
             ranking: Sequence[int] | None = None) -> list[Hit]:
    """The first `k` positions of `ranking` (default: nearest first) as Hits, rank from 1; whatever ranked the
    chunks (BM25, fusion), each Hit carries its cosine distance, which the gate reads.

    >>> hits = top_hits(["c0", "c1", "c2"], np.array([0.3, 0.1, 0.2]), k=2)  # real callers pass Chunks
    >>> [(h.chunk, h.distance, h.rank) for h in hits]
    [('c1', 0.1, 1), ('c2', 0.2, 2)]
    """
    check_k(k)
    positions = order(distances) if ranking is None else ranking
    return [Hit(chunks[i], float(distances[i]), rank) for rank, i in enumerate(positions[:k], start=1)]


@dataclass
class DenseIndex:
    """Chunks and their unit vectors; `search` is an exact scan over all of them."""

    chunks: list[Chunk]
    vectors: np.ndarray
    embedder: Embedder

    @classmethod
    def build(cls, chunks: list[Chunk], embedder: Embedder | None = None,
              progress: bool | None = None) -> DenseIndex:
        """Embed every chunk's `text` (header and overlap included: that is what the strategy is about)."""
        embedder = embedder or load_embedder()
        vectors = embedder.encode([c.text for c in chunks], progress=progress)
        return cls(chunks=list(chunks), vectors=vectors, embedder=embedder)

    def distances(self, query: str | np.ndarray) -> np.ndarray:
        """Cosine distance from the query to every chunk, in chunk order."""
        vector = self.embedder.encode_query(query) if isinstance(query, str) else query
        return cosine_distances(self.vectors, vector)

    def rank(self, query: str | np.ndarray) -> list[int]:
        """All chunk positions, nearest first (ties by position)."""
        return order(self.distances(query)).tolist()

    def search(self, query: str | np.ndarray, k: int = 4) -> list[Hit]:
        """The k nearest chunks as Hits, nearest first."""
        return top_hits(self.chunks, self.distances(query), k)


def describe(embedder: Embedder) -> str:
    """One line naming the model, its dimension and fingerprint (what an index must be stamped with)."""
    return json.dumps({"model": embedder.name, "dim": embedder.dim, "fingerprint": embedder.fingerprint})
