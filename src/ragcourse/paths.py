"""Where the course's files live: one place for every path the package reads or writes.

A clone keeps its data beside the package (``data/``, ``benchmarks/results/``); environment variables
move each root. What a reader's own documents cache (``ragcourse eval``) goes to `user_cache_dir`,
never into the checkout. Leaves out: creating folders (the code that writes them does).
"""

from __future__ import annotations

import os
from pathlib import Path

#: The checkout's root when the package runs from a clone (``src/ragcourse/`` two levels down).
ROOT = Path(__file__).resolve().parents[2]
#: Committed data (ground truth, fingerprints, the sources' figures) and the built corpora.
DATA_DIR = Path(os.environ.get("RAGCOURSE_DATA", ROOT / "data"))
#: The course's cached vectors and token matrices; RAGCOURSE_CACHE moves it (nbval's older-CPU pass embeds afresh).
CACHE_ROOT = Path(os.environ.get("RAGCOURSE_CACHE", DATA_DIR / "cache"))
#: The optional models `make models` assembles (ragcourse.build.models); RAGCOURSE_MODELS moves it.
MODELS_DIR = Path(os.environ.get("RAGCOURSE_MODELS", DATA_DIR / "models"))
#: Stored runs the chapters read (timings, SmolLM2's outputs), written by ``benchmarks/``.
RESULTS_DIR = Path(os.environ.get("RAGCOURSE_RESULTS", ROOT / "benchmarks" / "results"))


def user_cache_dir() -> Path:
    """The cache for a reader's own documents: $RAGCOURSE_CACHE, else the platform's user cache folder.

    >>> user_cache_dir().name in {"ragcourse", os.environ.get("RAGCOURSE_CACHE", "ragcourse").rsplit("/", 1)[-1]}
    True
    """
    if os.environ.get("RAGCOURSE_CACHE"):
        return Path(os.environ["RAGCOURSE_CACHE"])
    import platformdirs

    return Path(platformdirs.user_cache_dir("ragcourse", appauthor=False))
