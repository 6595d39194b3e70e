"""Learned sparse retrieval with SPLADE: a text as a weighted bag of vocabulary entries (chapters 4 and 5).

A masked language model reads a text and gives, at every token position, one logit per vocabulary entry:
how well that entry would fit there. SPLADE (Formal et al., SIGIR 2021) turns those logits into one weight
per entry, ``w_j = max_i log(1 + relu(logit_ij))`` over the text's real positions `i`, so a text becomes a
sparse vector over the 30,522 entries of BERT's vocabulary: its own words, and related words the model
*expands* it with. A query and a passage are compared by the dot product of their vectors, as BM25 compares
bags of terms, but with weights a model learned. `sparse_weights`, `score` and `rank` are that arithmetic,
pure and shown in chapter 4; `encode` runs SPLADE-tiny (`ragcourse.models.load_splade`) on
`models.threads()` threads; `SpladeReranker` re-scores a shortlist (chapter 5).

What it leaves out: training (the FLOPS regulariser that makes the vectors sparse), an inverted index (a few
thousand passages are scored by a loop over the query's entries), and query-side pruning. CI never runs the
model: the chapters read a stored run (`benchmarks/splade_run.py`, `stored_run`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from . import models, precision
from .dense import texts_sha256
from .models import StaleRunError
from .paths import RESULTS_DIR

#: A text's SPLADE vector: vocabulary id -> weight (> 0); entries of weight 0 are left out.
SparseVector = dict[int, float]
#: The model's window in word pieces ([CLS] and [SEP] included); longer texts are truncated.
MAX_LENGTH = 512
#: The stored run that chapters 4 and 5 read, written by `benchmarks/splade_run.py` (`make splade`).
RUN_FILE = RESULTS_DIR / "splade.json"


def sparse_weights(logits: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Per text, ``max_i log(1 + relu(logits[i])) * mask[i]`` over positions: (n, L, V) -> (n, V).

    Two positions, a vocabulary of three; the second position is padding (mask 0) and counts for nothing:

    >>> logits = np.array([[[2.0, -1.0, 0.0], [9.0, 9.0, 9.0]]])
    >>> sparse_weights(logits, np.array([[1, 0]])).astype(float).round(4).tolist()  # log(1 + 2) = 1.0986
    [[1.0986, 0.0, 0.0]]
    """
    logits, mask = np.asarray(logits, dtype=np.float32), np.asarray(mask, dtype=np.float32)  # float32: the model's
    if logits.ndim != 3 or mask.shape != logits.shape[:2]:
        raise ValueError(f"logits {logits.shape}, mask {mask.shape}: expected (n, L, V) and (n, L)")
    return (np.log1p(np.maximum(logits, 0.0)) * mask[:, :, None]).max(axis=1)


def to_sparse(weights: np.ndarray) -> SparseVector:
    """The non-zero entries of one row of `sparse_weights`, rounded to `precision.DECIMALS` places.

    >>> to_sparse(np.array([0.0, 1.0986123, 0.0, 0.25]))
    {1: 1.098612, 3: 0.25}
    """
    row = precision.rounded_scores(weights)
    return {int(j): float(row[j]) for j in np.flatnonzero(row > 0)}


def score(query: SparseVector, passage: SparseVector) -> float:
    """The dot product of two sparse vectors: the sum over shared entries of the two weights (>= 0).

    >>> score({1: 2.0, 7: 0.5}, {1: 1.5, 3: 4.0})  # only entry 1 is shared: 2.0 x 1.5
    3.0
    """
    if len(passage) < len(query):
        query, passage = passage, query
    total = sum(weight * passage.get(j, 0.0) for j, weight in query.items())
    return round(float(total), precision.DECIMALS)


def rank(query: SparseVector, passages: Sequence[SparseVector]) -> list[int]:
    """Positions of `passages`, best score first; equal scores keep their order (`precision.stable_order`).

    >>> rank({1: 1.0}, [{2: 3.0}, {1: 0.5}, {1: 2.0}])
    [2, 1, 0]
    """
    return precision.stable_order([score(query, p) for p in passages], descending=True).tolist()


def encode(texts: Sequence[str], max_length: int = MAX_LENGTH) -> list[SparseVector]:
    """SPLADE-tiny's sparse vector of each text, on `models.threads()` threads (the model loads on first use).

    One text at a time: no padding, and the (positions x 30,522) logits of one text stay small.
    """
    import torch

    tokenizer, model = models.load_splade()
    out: list[SparseVector] = []
    with models.torch_threads(models.threads()):
        for text in texts:
            tokens = tokenizer([text], truncation=True, max_length=max_length, return_tensors="pt")
            with torch.inference_mode():
                logits = model(**tokens).logits
            out.append(to_sparse(sparse_weights(logits.numpy(), tokens["attention_mask"].numpy())[0]))
    return out


class SpladeReranker:
    """SPLADE-tiny as a chapter 5 reranker: the dot product of the query's vector with each passage's.

    Passage vectors are kept in memory once computed (an index would compute them at indexing time).
    """

    name = "SPLADE-tiny"

    def __init__(self, use: str = "text") -> None:
        self.use = use
        self.vectors: dict[str, SparseVector] = {}

    def passage_vectors(self, passages: Sequence[str]) -> list[SparseVector]:
        """The passages' vectors, encoding only those not seen before."""
        missing = list(dict.fromkeys(p for p in passages if p not in self.vectors))
        self.vectors.update(zip(missing, encode(missing), strict=True))
        return [self.vectors[p] for p in passages]

    def score(self, query: str, passages: list[str]) -> np.ndarray:
        """One score per passage, in the order given."""
        if not passages:
            return np.zeros(0)
        vector = encode([query])[0]
        return np.array([score(vector, p) for p in self.passage_vectors(passages)])


def stored_run(chunk_texts: Sequence[str], query_texts: dict[str, str], path: Path | str = RUN_FILE,
               parts: Sequence[str] = ("development", "held_out")) -> dict:
    """The stored SPLADE run, once its hashes match the live chunks and queries; else StaleRunError naming what.

    `query_texts` maps each query id of the checked `parts` of the run to its text.
    """
    run = json.loads(Path(path).read_text(encoding="utf-8"))
    if run["chunks_sha256"] != texts_sha256(chunk_texts):
        raise StaleRunError(f"{path}: recorded on other chunks than the live ones; rerun `make splade`")
    for part in parts:
        rows = run[part]["rows"]
        changed = [r["query"] for r in rows if query_texts.get(r["query"]) is None
                   or r["query_sha256"] != texts_sha256([query_texts[r["query"]]])]
        if changed:
            raise StaleRunError(f"{path}: {part} query {changed[0]!r} differs from the live one; rerun `make splade`")
    return run


def check_shortlists(run_part: dict, shortlists: dict[str, Sequence[str]]) -> None:
    """StaleRunError unless each row's `shortlist_sha256` is the hash of the live shortlist's texts."""
    for row in run_part["rows"]:
        if row["shortlist_sha256"] != texts_sha256(shortlists[row["query"]]):
            raise StaleRunError(f"query {row['query']!r}: the hybrid shortlist changed; rerun `make splade`")
