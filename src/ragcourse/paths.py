"""Where the course's files live: one place for every path the package reads or writes.

A clone keeps its data beside the package (``data/``, ``benchmarks/results/``); environment variables
move each root. An installed wheel has no clone around it: it finds the course's data through
``RAGCOURSE_DATA`` (a clone's ``data/`` after ``make corpus``), and says so when it is missing.
What a reader's own documents cache (``ragcourse eval``) goes to `user_cache_dir`,
never into the checkout. Every cache folder is tagged as one (`cache_folder`), wherever a setting put it.
Leaves out: creating the other folders (the code that writes them does).
"""

from __future__ import annotations

import os
from pathlib import Path


def _user_dir(kind: str) -> Path:
    """A platformdirs folder for ragcourse, e.g. `_user_dir("user_data_dir")` is ~/.local/share/ragcourse on Linux."""
    import platformdirs

    return Path(getattr(platformdirs, kind)("ragcourse", appauthor=False))


#: The checkout's root when the package runs from a clone (``src/ragcourse/`` two levels down).
ROOT = Path(__file__).resolve().parents[2]
#: True in a clone (the package in src/, data/ beside it; the grader's sandbox shows only those two);
#: False for an installed wheel, whose ROOT is only site-packages' parent.
IN_CHECKOUT = Path(__file__).resolve().parents[1].name == "src" and (ROOT / "data").is_dir()
#: Where the course's data is looked for outside a clone (the setting), said in every "not found" message.
DATA_SETTING = "RAGCOURSE_DATA"
#: What to add to a "run `make corpus`" hint when the package is installed, not run from a clone.
DATA_HINT = "" if IN_CHECKOUT else (f"; this ragcourse is installed, not a clone: set {DATA_SETTING} to the data/ "
                                    "folder of a clone of the course where `make corpus` ran")
#: Committed data (ground truth, fingerprints, the sources' figures) and the built corpora: $RAGCOURSE_DATA,
#: else the clone's data/, else (an installed wheel) the user data folder, empty until RAGCOURSE_DATA is set.
DATA_DIR = Path(os.environ.get(DATA_SETTING) or (ROOT / "data" if IN_CHECKOUT else _user_dir("user_data_dir")))
#: The course's cached vectors and token matrices; RAGCOURSE_CACHE moves it (nbval's older-CPU pass embeds afresh).
CACHE_ROOT = Path(os.environ.get("RAGCOURSE_CACHE", DATA_DIR / "cache"))
#: The optional models `make models` assembles (ragcourse.build.models); RAGCOURSE_MODELS moves it.
MODELS_DIR = Path(os.environ.get("RAGCOURSE_MODELS", DATA_DIR / "models"))
#: Stored runs the chapters read (timings, SmolLM2's outputs), written by ``benchmarks/``.
RESULTS_DIR = Path(os.environ.get("RAGCOURSE_RESULTS", ROOT / "benchmarks" / "results"))


#: The tag of a cache folder (the Cache Directory Tagging Specification, https://bford.info/cachedir/): backup
#: tools skip the folder, and the grader's reference-state key leaves out what it holds (kit/cache.py).
CACHE_TAG = "CACHEDIR.TAG"
CACHE_TAG_TEXT = ("Signature: 8a477f597d28d172789f06886806bc55\n"
                  "# A cache of ragcourse: anything in it is made again when it is missing.\n")


def cache_folder(path: Path) -> Path:
    """`path`, made if missing and tagged as a cache before anything else is written in it (OSError if it cannot be).

    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     (cache_folder(Path(tmp) / "embeddings") / CACHE_TAG).read_text().startswith("Signature: ")
    True
    """
    path.mkdir(parents=True, exist_ok=True)
    try:
        with open(path / CACHE_TAG, "x", encoding="ascii") as tag:
            tag.write(CACHE_TAG_TEXT)
    except FileExistsError:  # tagged already, by this run or another one
        pass
    return path


def user_cache_dir() -> Path:
    """The cache for a reader's own documents: $RAGCOURSE_CACHE, else the platform's user cache folder.

    >>> user_cache_dir().name in {"ragcourse", os.environ.get("RAGCOURSE_CACHE", "ragcourse").rsplit("/", 1)[-1]}
    True
    """
    if os.environ.get("RAGCOURSE_CACHE"):
        return Path(os.environ["RAGCOURSE_CACHE"])
    return _user_dir("user_cache_dir")
