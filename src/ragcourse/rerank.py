"""Reranking a shortlist: a cross-encoder if one is installed, else late interaction (chapter 5).

A first-stage retriever (BM25, dense, or their RRF fusion) returns a shortlist; a reranker scores
each (query, passage) pair again, more carefully, and the shortlist is re-sorted by that score.
Two rerankers implement the small `Reranker` protocol:

- `CrossEncoderReranker`: query and passage go through one transformer together and come out as
  one relevance score (the original chapter uses cross-encoder/ms-marco-MiniLM-L6-v2). No wheel
  carries a trained MS MARCO cross-encoder, so it is used only when `RAGCOURSE_RERANKER` names one.
- `LateInteractionReranker`: ColBERT-style MaxSim (Khattab & Zaharia, SIGIR 2020) over the
  embedder's own token vectors, passages' cached, so a query costs one short forward pass and a
  matrix product. It needs no other model, which makes it the offline default (`default_reranker`).

Left out on purpose: training (chapter 5's fine-tuned cross-encoder is a documented negative result,
its stored ranks are written by `benchmarks/reranker_ranks.py`), LLM judges (`benchmarks/judge_trial.py`), latency
measurement (`benchmarks/rerank_trial.py`), ColBERT's query augmentation with [MASK] tokens and its
learned 128-d projection (the MiniLM's 384-d vectors are used as they are), and approximate MaxSim
indexes (PLAID): a shortlist of 25 is scored exactly.
"""

from __future__ import annotations

import functools
import os
import string
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from . import models, precision
from .chunking import Chunk
from .dense import model_fingerprint, text_key
from .paths import CACHE_ROOT, cache_folder

TOKENS_DIR = CACHE_ROOT / "tokens"
USES = ("text", "content")
#: The shortlist a reranker rescores, the original chapter's 25 (`rerank_head`, `rerank_rankings` and
#: `signals.measure`, shown in chapters 5 and 6, write it out; tests/test_layout.py keeps them equal).
DEPTH = 25
#: Which side's punctuation word pieces `LateInteractionReranker` drops before MaxSim.
SKIP_PUNCTUATION = ("both", "query", "passage", "none")
# MaxSim scores are rounded to `ragcourse.precision.DECIMALS` places, so float noise (BLAS, CPU
# kernels) cannot reorder near-ties between machines; exact ties then keep their shortlist order.


@runtime_checkable
class Reranker(Protocol):
    """Anything that scores passages for one query; higher means more relevant.

    `use` names the `Chunk` field the reranker reads ("text": header + content, or "content").
    """

    name: str
    use: str

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        """One float score per passage, in the order given."""
        ...


@dataclass(frozen=True)
class Reranked:
    """A chunk after reranking: its new score, its new rank and its rank before (both from 1)."""

    chunk: Chunk
    score: float
    rank: int
    old_rank: int


def _check_use(use: str) -> str:
    if use not in USES:
        raise ValueError(f"use={use!r}: expected one of {list(USES)}")
    return use


def checked_scores(name: str, scores, n: int, dtype=np.float64) -> np.ndarray:
    """`scores` as an array of `dtype` when it holds one score per passage (`n`); else ValueError naming its shape.

    >>> checked_scores("toy", [0.5, 0.1], 2).tolist()
    [0.5, 0.1]
    >>> checked_scores("toy", [[0.5, 0.1]], 2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ValueError: toy gives scores of shape (1, 2) for 2 passages: expected one score per passage ...
    """
    scores = np.asarray(scores, dtype=dtype)
    if scores.shape != (n,):
        raise ValueError(f"{name} gives scores of shape {scores.shape} for {n} passages: expected one score per "
                         "passage (a cross-encoder with one output label, like the ms-marco ones)")
    return scores


def order_by_score(scores: Sequence[float]) -> list[int]:
    """Positions by score descending, ties by position: `order_by_score([1, 3, 1]) -> [1, 0, 2]`."""
    return precision.stable_order(scores, descending=True).tolist()


def rerank(
    reranker: Reranker, query: str, chunks: Sequence[Chunk], top: int | None = None
) -> list[Reranked]:
    """Score `chunks` (a shortlist, best first) with `reranker` and re-sort them.

    Sorted by score descending; equal scores keep their shortlist order (old rank ascending).
    `top` keeps only the first `top` results (None keeps all).
    """
    if top is not None and (not isinstance(top, int) or top < 1):
        raise ValueError(f"top={top!r}: expected None or an integer >= 1")
    field = _check_use(getattr(reranker, "use", "text"))
    if not chunks:
        return []
    passages = [getattr(c, field) for c in chunks]
    scores = checked_scores(reranker.name, reranker.score(query, passages), len(chunks))
    order = order_by_score(scores)[:top]
    return [Reranked(chunks[i], float(scores[i]), rank, i + 1)
            for rank, i in enumerate(order, start=1)]


def rerank_head(reranker: Reranker, query: str, ranked: Sequence[Chunk], depth: int = 25) -> list[Chunk]:
    """A full ranking with its first `depth` chunks reranked and the rest left in place.

    Metrics over the result and over `ranked` then cover the same chunks, so before and after
    compare like with like (R@k for k > depth cannot change).
    """
    if not isinstance(depth, int) or depth < 1:
        raise ValueError(f"depth={depth!r}: expected an integer >= 1")
    head = rerank(reranker, query, ranked[:depth])
    return [r.chunk for r in head] + list(ranked[depth:])


def rerank_rankings(reranker: Reranker, queries: Sequence, rankings: Mapping[str, Sequence[Chunk]],
                    depth: int = 25) -> dict[str, list[Chunk]]:
    """Query id -> its ranking from `rankings` with the top `depth` reranked (`rerank_head`).

    `queries` are `groundtruth.Query` objects (anything with `id` and `text`); the result is what
    `evaluation.evaluate` reads. A toy reranker that prefers longer passages, over four passages:

    >>> from types import SimpleNamespace as Passage
    >>> class Longest:
    ...     name, use = "longest", "text"
    ...     def score(self, query, passages):
    ...         return np.array([len(p) for p in passages], dtype=float)
    >>> ranked = [Passage(text=t) for t in ("a", "ccc", "bb", "dddd")]
    >>> out = rerank_rankings(Longest(), [Passage(id="q1", text="any")], {"q1": ranked}, depth=3)
    >>> [p.text for p in out["q1"]]  # the top 3 re-sorted; "dddd" sits below the cut and stays
    ['ccc', 'bb', 'a', 'dddd']
    """
    return {q.id: rerank_head(reranker, q.text, rankings[q.id], depth) for q in queries}


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder (e.g. cross-encoder/ms-marco-MiniLM-L6-v2), loaded on first use.

    `source` is a local folder (or a hub name with RAGCOURSE_ALLOW_DOWNLOAD=1); None reads
    `RAGCOURSE_RERANKER`. Pairs longer than `max_length` tokens are truncated by the tokenizer.
    """

    def __init__(self, source: str | None = None, batch_size: int = 32, max_length: int = 512,
                 use: str = "text") -> None:
        if batch_size < 1 or max_length < 8:
            raise ValueError(f"batch_size={batch_size!r}, max_length={max_length!r}: "
                             "expected batch_size >= 1 and max_length >= 8")
        if source is None:
            spec = models.reranker_spec()
            if spec is None:
                raise ValueError("source=None and RAGCOURSE_RERANKER is not set: "
                                 "expected a cross-encoder folder")
            name, resolved = spec.name, spec.source
        else:  # the same rule as RAGCOURSE_RERANKER: a folder, or a hub name only with downloads on
            name, resolved = source, models.resolve_source(source, "source")
        self.name, self.use = name, _check_use(use)
        self.batch_size, self.max_length = batch_size, max_length
        self.source = resolved

    @property
    def model(self):
        """The CrossEncoder, loaded on first use (as the embedder is): naming or checking a reranker loads nothing."""
        return models.load_cross_encoder(self.source)

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        """One relevance score per passage (the model's output; only the order matters)."""
        if not passages:
            return np.zeros(0, dtype=np.float32)
        self.model.max_length = self.max_length  # the loaded model is shared: set ours each call
        scores = self.model.predict([(query, p) for p in passages], batch_size=self.batch_size,
                                    show_progress_bar=False, convert_to_numpy=True)
        return checked_scores(self.name, scores, len(passages), np.float32)


def maxsim(query_tokens: np.ndarray, passage_tokens: np.ndarray) -> float:
    """Late interaction: each query token's best dot product with any passage token, summed.

    ``score(q, p) = sum_i max_j <q_i, p_j>`` (Khattab & Zaharia, "ColBERT", SIGIR 2020); with unit
    rows each dot product is a cosine. Rounded to `precision.DECIMALS` places. Worked example, two query
    tokens and three passage tokens:

    >>> q = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> p = np.array([[0.6, 0.8], [1.0, 0.0], [0.0, -1.0]])
    >>> maxsim(q, p)  # q_0: max(0.6, 1.0, 0.0) = 1.0;  q_1: max(0.8, 0.0, -1.0) = 0.8
    1.8
    """
    q, p = np.asarray(query_tokens, dtype=np.float32), np.asarray(passage_tokens, dtype=np.float32)
    if q.ndim != 2 or p.ndim != 2 or q.shape[1] != p.shape[1] or len(q) == 0 or len(p) == 0:
        raise ValueError(f"query {q.shape}, passage {p.shape}: expected non-empty (n, d), (m, d)")
    return round(float((q @ p.T).max(axis=1).sum(dtype=np.float64)), precision.DECIMALS)


@functools.cache
def _blas():
    """numpy's BLAS, whose threads `maxsim_many` holds to one (threadpoolctl, loaded at first use)."""
    from threadpoolctl import ThreadpoolController

    return ThreadpoolController()


def maxsim_many(query_tokens: np.ndarray, passages: Sequence[np.ndarray]) -> np.ndarray:
    """`maxsim` against many passages with one float32 matrix product over their stacked tokens.

    The product (query tokens x a few thousand passage tokens) runs on one BLAS thread: on a busy machine
    OpenBLAS' second thread spins longer than the product takes (5.4 against 1.2 ms of CPU for 25 passages at
    load 5), and the result is the same product, element for element.
    """
    lengths = np.array([len(p) for p in passages])
    if len(passages) == 0 or (lengths == 0).any():
        raise ValueError(f"passage token counts {lengths.tolist()}: expected >= 1 token each")
    stacked = np.concatenate(passages, dtype=np.float32)
    with _blas().limit(limits=1, user_api="blas"):
        sims = np.asarray(query_tokens, dtype=np.float32) @ stacked.T
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    best = np.maximum.reduceat(sims, starts, axis=1)  # (query tokens, passages)
    return np.round(best.sum(axis=0, dtype=np.float64), precision.DECIMALS)


def special_ids(tokenizer) -> set[int]:
    """Token ids that carry no text: [CLS], [SEP], [PAD] (not [UNK], which stands for real text)."""
    ids = (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id,
           tokenizer.bos_token_id, tokenizer.eos_token_id)
    return {i for i in ids if i is not None}


def punctuation_ids(tokenizer) -> frozenset[int]:
    """Ids of vocabulary entries made only of ASCII punctuation ("?", ",", "##.", "..."): ColBERT's skiplist.

    Khattab & Zaharia filter these out of passages; their contextual vectors match one another
    whatever the text says (a "?" in the query finds the "?" of any FAQ heading).
    """
    marks = set(string.punctuation)
    return frozenset(i for piece, i in tokenizer.get_vocab().items()
                     if piece.removeprefix("##") and set(piece.removeprefix("##")) <= marks)


def token_vectors(model, texts: list[str], batch_size: int = 32,
                  skip: frozenset[int] = frozenset()) -> list[np.ndarray]:
    """Per text, the L2-normalised vectors of its real tokens (float32), special tokens dropped.

    Tokens whose ids are in `skip` are dropped too, unless that would leave a text with none (a
    text of punctuation only keeps its punctuation). Texts longer than the model's
    `max_seq_length` (256 for the MiniLM) are truncated.
    """
    import torch

    special = torch.tensor(sorted(special_ids(model.tokenizer)))
    skipped = torch.tensor(sorted(skip), dtype=torch.long)
    prepare = getattr(model, "preprocess", None) or model.tokenize  # `tokenize` before ST 6
    out: list[np.ndarray] = [np.zeros(0)] * len(texts)
    by_length = sorted(range(len(texts)), key=lambda i: (-len(texts[i]), i))  # less padding
    for start in range(0, len(texts), batch_size):
        batch = by_length[start:start + batch_size]
        features = prepare([texts[i] for i in batch])
        with torch.inference_mode():
            hidden = model(features)["token_embeddings"]
        real = features["attention_mask"].bool() & ~torch.isin(features["input_ids"], special)
        kept = real & ~torch.isin(features["input_ids"], skipped)
        for row, i in enumerate(batch):
            keep = kept[row] if kept[row].any() else real[row]
            vectors = torch.nn.functional.normalize(hidden[row][keep], dim=-1)
            out[i] = vectors.numpy().astype(np.float32)
    return out


def kept_pieces(model, text: str, skip: frozenset[int] = frozenset()) -> list[str]:
    """The word pieces whose vectors `token_vectors(model, [text], skip=skip)` keeps, in order."""
    tokenizer = model.tokenizer
    ids = tokenizer(text, truncation=True, max_length=model.max_seq_length)["input_ids"]
    real = [i for i in ids if i not in special_ids(tokenizer)]
    kept = [i for i in real if i not in skip] or real
    return tokenizer.convert_ids_to_tokens(kept)


class LateInteractionReranker:
    """ColBERT-style MaxSim over the embedder's L2-normalised token vectors (no training needed).

    `skip_punctuation` (one of `SKIP_PUNCTUATION`): whose punctuation pieces to drop. Passage tokens are
    cached as float16, fresh and reloaded alike, so scores never depend on the cache (`index` saves it);
    queries' tokens are saved as they are (float32) beside them. The model loads only to encode what no
    cache holds, so a re-run over unchanged chunks and questions loads none.
    """

    def __init__(self, embedder_model=None, use: str = "text", cache_dir: Path | None = TOKENS_DIR,
                 fingerprint: str | None = None, batch_size: int = 32,
                 skip_punctuation: str = "both", remember_queries: bool = True) -> None:
        if skip_punctuation not in SKIP_PUNCTUATION:
            raise ValueError(f"skip_punctuation={skip_punctuation!r}: expected one of {list(SKIP_PUNCTUATION)}")
        self._model, self._spec, self._skip = embedder_model, None, None
        if embedder_model is None:
            self._spec = models.embedder_spec()
            fingerprint, model_name = model_fingerprint(self._spec.source), self._spec.name
        else:
            model_name = type(embedder_model).__name__
        self.use, self.batch_size, self.skip_punctuation = _check_use(use), batch_size, skip_punctuation
        punctuation = "" if skip_punctuation == "both" else f", punctuation skipped: {skip_punctuation}"
        self.name = f"late interaction ({model_name.rsplit('/', 1)[-1]}, {use}{punctuation})"
        self.fingerprint = fingerprint
        self.cache_dir = None if fingerprint is None or cache_dir is None else Path(cache_dir)
        self.tokens: dict[str, np.ndarray] = {}
        self._float32: dict[str, np.ndarray] = {}  # score's float32 copies of `tokens`
        self.queries: dict[str, np.ndarray] = {}
        self.remember_queries = remember_queries
        self.last_stats: dict = {}
        self._loaded = False

    @property
    def model(self):
        """The embedder, loaded on first use."""
        if self._model is None:
            self._model = models.load_embedder()
        return self._model

    @property
    def query_skip(self) -> frozenset[int]:
        return self._skips()[0]

    @property
    def passage_skip(self) -> frozenset[int]:
        return self._skips()[1]

    def _skips(self) -> tuple[frozenset[int], frozenset[int]]:
        if self._skip is None:
            skip = punctuation_ids(self.model.tokenizer)
            self._skip = (skip if self.skip_punctuation in ("both", "query") else frozenset(),
                          skip if self.skip_punctuation in ("both", "passage") else frozenset())
        return self._skip

    def _cache_file(self, kind: str = "") -> Path | None:
        if self.cache_dir is None:
            return None
        length = self._spec_length() if self._model is None else self.model.max_seq_length
        suffix = {"both": "-nopunct", "passage": "-nopunct", "query": "", "none": ""}[self.skip_punctuation]
        if kind:  # the queries' file: their own skip list
            suffix = f"-{kind}" + ("-nopunct" if self.skip_punctuation in ("both", "query") else "")
        return self.cache_dir / f"{self.fingerprint}-L{length}{suffix}.npz"

    def _spec_length(self) -> int:
        """The model's max_seq_length from its folder (sentence-transformers' config), else from the model."""
        import json

        config = Path(self._spec.source) / "sentence_bert_config.json"
        try:
            return int(json.loads(config.read_text(encoding="utf-8"))["max_seq_length"])
        except (OSError, ValueError, KeyError, TypeError):
            return self.model.max_seq_length

    def _load(self) -> None:
        """Read the disk caches once, on first use."""
        self._loaded = True
        for store, path in ((self.tokens, self._cache_file()), (self.queries, self._cache_file("queries"))):
            if path is not None and path.is_file():
                with np.load(path) as data:
                    pieces = np.split(data["tokens"], np.cumsum(data["lengths"])[:-1])
                    store.update(zip(data["keys"].tolist(), pieces, strict=True))

    def save(self) -> Path | None:
        """Write every cached passage matrix (stacked fp16) and query matrix (fp32) to disk; the passages' file."""
        path = self._cache_file()
        if path is None or not self.tokens:
            return None
        _save_matrices(path, self.tokens)
        if self.queries:
            _save_matrices(self._cache_file("queries"), self.queries)
        return path

    def passage_tokens(self, passages: list[str]) -> list[np.ndarray]:
        """Token matrices (float16) for `passages`, computing only those not cached yet."""
        if not self._loaded:
            self._load()
        keys = [text_key(p) for p in passages]
        missing = dict(zip(keys, passages, strict=True))
        missing = {k: t for k, t in missing.items() if k not in self.tokens}
        started = time.perf_counter()
        if missing:
            vectors = token_vectors(self.model, list(missing.values()), self.batch_size, self.passage_skip)
            for key, matrix in zip(missing, vectors, strict=True):
                self.tokens[key] = matrix.astype(np.float16)
        self.last_stats = {"passages": len(passages), "encoded": len(missing),
                           "seconds": time.perf_counter() - started}
        return [self.tokens[k] for k in keys]

    def index(self, passages: list[str]) -> Path | None:
        """Precompute (and save, if there is a disk cache) the token matrices of `passages`."""
        self.passage_tokens(passages)
        return self.save() if self.last_stats["encoded"] else self._cache_file()

    def query_tokens(self, query: str) -> np.ndarray:
        """The query's token vectors (float32), remembered in memory for this process and in the disk cache
        (`save`) unless told not to. A chapter reranks the same queries many times; the vectors are the same.
        """
        if not self.remember_queries:
            return token_vectors(self.model, [query], skip=self.query_skip)[0]
        if not self._loaded:
            self._load()
        key = (self.fingerprint or id(self.model), self.skip_punctuation in ("both", "query"), query)
        if key not in _QUERY_TOKENS:
            while len(_QUERY_TOKENS) >= max(QUERY_MEMORY, 1):
                _QUERY_TOKENS.pop(next(iter(_QUERY_TOKENS)))  # the oldest first
            stored = self.queries.get(text_key(query))
            _QUERY_TOKENS[key] = stored if stored is not None else token_vectors(
                self.model, [query], skip=self.query_skip)[0]
        if self.cache_dir is not None:
            self.queries[text_key(query)] = _QUERY_TOKENS[key]
        return _QUERY_TOKENS[key]

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        """MaxSim of the query against every passage (over float32 copies of the passages' float16 matrices,
        made once per passage and held for this reranker's life: the same values, converted once)."""
        if not passages:
            return np.zeros(0, dtype=np.float64)
        q = self.query_tokens(query)
        if len(q) == 0:
            raise ValueError(f"query={query!r} has no tokens: expected some text")
        keys = [text_key(p) for p in passages]
        if any(k not in self._float32 for k in keys):
            for key, matrix in zip(keys, self.passage_tokens(passages), strict=True):
                self._float32.setdefault(key, matrix.astype(np.float32))
        return maxsim_many(q, [self._float32[k] for k in keys])


def _save_matrices(path: Path, matrices: dict[str, np.ndarray]) -> None:
    """One npz of many matrices (keys, row counts, rows stacked), replaced whole so a reader never sees half."""
    cache_folder(path.parent)  # tagged first: no one takes what it holds for the course's data
    keys = sorted(matrices)
    tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")  # two processes saving at once never share a file
    np.savez(tmp, keys=np.array(keys), lengths=np.array([len(matrices[k]) for k in keys]),
             tokens=np.concatenate([matrices[k] for k in keys]))
    os.replace(tmp, path)


#: How many queries' token vectors `LateInteractionReranker.query_tokens` keeps (shared by its instances).
QUERY_MEMORY = 4096
_QUERY_TOKENS: dict[tuple, np.ndarray] = {}


def default_reranker() -> Reranker:
    """The cross-encoder named by RAGCOURSE_RERANKER if set, else late interaction (embedder)."""
    if models.reranker_spec() is not None:
        return CrossEncoderReranker()
    return LateInteractionReranker()
