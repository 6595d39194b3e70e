"""The primary corpus: docutils 0.22.2's own documentation, rendered to Markdown (chapter 1).

(Work in progress: the builder is being written; Document is the stable public type.)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

#: Where committed data (ground truth, fingerprints) and built caches live.
DATA_DIR = Path(os.environ.get("RAGCOURSE_DATA", Path(__file__).resolve().parents[2] / "data"))


@dataclass(frozen=True)
class Document:
    """One corpus document; `text` is the canonical text every character offset refers to."""

    id: str
    title: str
    text: str
