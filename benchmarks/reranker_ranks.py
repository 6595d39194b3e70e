"""Chapter 5's fine-tuned cross-encoder: load the stored model, verify it, and store its ranks.

A documented negative result (`models/reranker/MODEL_CARD.md`): a cross-encoder fine-tuned from the
embedder's MiniLM on FAQ questions ranks the hybrid shortlist worse than a random order. Chapter 5 reads
the per-query ranks this script stores in `benchmarks/results/finetuned.json`; the tests rerank four
queries live with the stored weights and compare. The package neither ships nor imports this script.

Leaves out: training. The script that fetched the training sdists, built the pairs and trained the model
was dropped once the result was recorded (its model card keeps the data, settings and losses; the code
is in the history before the commit that removed `benchmarks/reranker_train.py`).

Command line: `python benchmarks/reranker_ranks.py` rewrites `benchmarks/results/finetuned.json`.
"""

from __future__ import annotations

import json
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from ragcourse import models, pipeline
from ragcourse.corpus import sha256_file
from ragcourse.dense import model_fingerprint
from ragcourse.evaluation import first_hit_rank
from ragcourse.groundtruth import load_questions, queries
from ragcourse.paths import RESULTS_DIR, ROOT
from ragcourse.rerank import DEPTH, CrossEncoderReranker, rerank_rankings

MODEL_DIR = ROOT / "models" / "reranker"
RESULTS = RESULTS_DIR / "finetuned.json"
WEIGHTS_FILE = "reranker.safetensors"
MANIFEST_FILE = "manifest.json"
SHORTLIST = DEPTH  # chapter 5's shortlist, fixed before any evaluation

#: Parameter-name prefixes (of BertForSequenceClassification) that were trained and stored.
TRAINED_PREFIXES = ("bert.encoder.layer.4.", "bert.encoder.layer.5.", "bert.pooler.", "classifier.")


class RerankerFilesError(ValueError):
    """The stored reranker is missing, altered, or was trained on top of a different base model."""


def trainable(name: str) -> bool:
    """Is this parameter trained (and stored)? `trainable("bert.encoder.layer.5.output.dense.bias")` -> True."""
    return name.startswith(TRAINED_PREFIXES)


def read_manifest(folder: Path | None = None) -> dict:
    """The stored reranker's manifest; RerankerFilesError if the folder or files are missing."""
    folder = Path(folder) if folder is not None else MODEL_DIR
    manifest = folder / MANIFEST_FILE
    if not folder.is_dir() or not manifest.is_file() or not (folder / WEIGHTS_FILE).is_file():
        raise RerankerFilesError(f"folder={str(folder)!r} does not hold {MANIFEST_FILE} and "
                                 f"{WEIGHTS_FILE}; see models/reranker/MODEL_CARD.md")
    return json.loads(manifest.read_text(encoding="utf-8"))


def verify_weights(folder: Path | None = None) -> Path:
    """The weights file, after checking its sha256 and the base model against the manifest."""
    folder = Path(folder) if folder is not None else MODEL_DIR
    manifest = read_manifest(folder)
    path = folder / WEIGHTS_FILE
    actual = sha256_file(path)
    if actual != manifest["weights"]["sha256"]:
        raise RerankerFilesError(f"{path} has sha256 {actual}, expected {manifest['weights']['sha256']} "
                                 f"(manifest.json); restore the file from git")
    spec = models.embedder_spec()
    base = model_fingerprint(spec.source)
    if base != manifest["base_model"]["fingerprint"]:
        raise RerankerFilesError(f"base model {spec.source} has fingerprint {base}, but the reranker "
                                 f"was trained on {manifest['base_model']['fingerprint']}")
    return path


class FineTunedReranker(CrossEncoderReranker):
    """The fine-tuned MiniLM cross-encoder; scoring is `CrossEncoderReranker.score`, unchanged.

    Built from its own CrossEncoder (`models.new_cross_encoder`), not the shared
    `models.load_cross_encoder` cache, which loads a folder as it is: the base folder has no head.
    """

    def __init__(self, model, name: str, max_length: int, batch_size: int = 32, use: str = "text") -> None:
        if use not in ("text", "content"):
            raise ValueError(f"use={use!r}: expected one of ['text', 'content']")
        self._model, self.name, self.use = model, name, use
        self.batch_size, self.max_length = batch_size, max_length

    @property
    def model(self):
        """Its own CrossEncoder with the stored head (the base class loads a shared one on first use)."""
        return self._model


def load_reranker(folder: Path | None = None, use: str = "text") -> FineTunedReranker:
    """Rebuild the fine-tuned reranker: base MiniLM + the stored tensors (upcast to fp32), verified."""
    import torch
    from safetensors.torch import load_file

    folder = Path(folder) if folder is not None else MODEL_DIR
    path = verify_weights(folder)
    manifest = read_manifest(folder)
    max_length = int(manifest["hyperparameters"]["max_length"])
    model = models.new_cross_encoder(models.embedder_spec().source, max_length)
    tensors = {k: v.to(torch.float32) for k, v in load_file(str(path)).items()}
    expected = {k for k, _ in model.transformers_model.state_dict().items() if trainable(k)}
    if set(tensors) != expected:
        raise RerankerFilesError(f"{path} holds {sorted(set(tensors) ^ expected)} unexpectedly: "
                                 f"expected exactly the tensors of {TRAINED_PREFIXES}")
    model.transformers_model.load_state_dict(tensors, strict=False)
    model.eval()
    return FineTunedReranker(model, name=f"fine-tuned MiniLM cross-encoder ({folder.name})",
                             max_length=max_length, use=use)


# --------------------------------------------------------------------------- ranks for chapter 5

def rank_rows(reranker, retriever, qs: Sequence, depth: int = SHORTLIST) -> list[dict]:
    """Per query: the needle's rank in the hybrid ranking and after `reranker` reranked its top `depth`."""
    hybrid = retriever.rankings(qs, "hybrid")
    reranked = rerank_rankings(reranker, qs, hybrid, depth)
    return [{"query": q.id, "hybrid_rank": first_hit_rank(hybrid[q.id], q.needle),
             "finetuned_rank": first_hit_rank(reranked[q.id], q.needle)} for q in qs]


def write_ranks(out: Path | None = None) -> dict:
    """Rerank the 64 development queries with the stored model; write the ranks and its record to `out`."""
    import torch

    out = Path(out) if out is not None else RESULTS
    reranker, manifest = load_reranker(), read_manifest()
    retriever, qs = pipeline.build("E"), queries(load_questions(subset="original"))
    started = time.perf_counter()
    rows = rank_rows(reranker, retriever, qs)
    seconds = time.perf_counter() - started
    record = {
        "reranker": reranker.name, "model": MODEL_DIR.relative_to(ROOT).as_posix(),
        "weights_sha256": manifest["weights"]["sha256"], "base_model": manifest["base_model"],
        "training_data": manifest["training_data"], "mean_loss": manifest["mean_loss"],
        "command": manifest["command"], "shortlist": SHORTLIST, "strategy": "E", "queries": len(qs),
        "seconds": round(seconds, 1), "seconds_per_query": round(seconds / len(qs), 2),
        "machine": f"{platform.machine()}, {torch.get_num_threads()} torch thread(s)", "rows": rows}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return record


def main() -> int:
    """`python benchmarks/reranker_ranks.py`: rerank with the stored model, write `RESULTS`."""
    try:
        record = write_ranks()
    except RerankerFilesError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"wrote {RESULTS} ({record['seconds']:.0f} s, {record['queries']} queries)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
