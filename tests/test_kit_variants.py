"""Each term's variant of an exercise (issue 45): its own answer, shown nowhere in the public book.

An instructor sets RAGCOURSE_VARIANT for a new term, and `choose` draws each exercise's constant from the
options its notebook lists (the book's variant is the first). For the exercises whose expected value the
package recomputes from the corpus in seconds (1.1, 2.2, 3.3, 5.4, 8.5, 9.3), every option gets its expected
value, confirmed by the hidden check itself (full marks); then

- no option's expected value, and no constant of the answer's type, gets full marks on another option, so
  neither the book's published answer nor a guess answers a term;
- the built book (book/_build/html, read like tests/test_book_text.py) shows no expected value of a term's
  variant, and the instructor guide's page none of any variant, the book's own included.

The book search looks for each value as the book would print it, where it would identify the answer: on
the exercise's own chapter (lesson and lab) and on the instructor guide's page. Elsewhere the same value
means something else (264, 3.3's n for a half-width of 0.06, is a section's length in lab 2; the section
of 1.1's rank 3 is a row of lab 2's table of chunks, which says nothing of its rank).
- an answer that is text (1.1's section) is the section's title within 120 characters after its document id;
- a whole number of two digits or more is itself, not next to a digit, a decimal point or a thousands comma;
- a one-digit number identifies nothing on its own, so only the answer's printed form is searched
  (8.5's `'predicted': 5`, 9.3's dict as Python prints it).
The book's own variant is the book's worked solution, shown behind a toggle in its chapter on purpose:
it is searched on the guide's page only. The exercises whose expected value needs the chapter's retrieval
runs (embeddings, rerankers, BM25 grids) are not recomputed here; `kit self-test` grades their book
variant in nbval, and tests/test_kit_fairness.py their checks' fairness.
"""

from __future__ import annotations

import ast
import atexit
import inspect
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import nbformat
import pytest

from tests.setup_missing import missing

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from kit.hidden import score  # noqa: E402
from ragcourse.book.exercises import VARIANT_ENV, choose  # noqa: E402
from tests.test_kit_fairness import _unreachable, checks  # noqa: E402

HTML = ROOT / "book" / "_build" / "html"


# ---- the options each notebook draws from --------------------------------------------------------------

def _calls(source: str, exercise: str) -> list[ast.Call]:
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a cell with IPython magic: not where an exercise draws its constant
        return []
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "choose"
            and node.args and isinstance(node.args[0], ast.Constant) and node.args[0].value == exercise]


@cache
def options(exercise: str) -> list:
    """The options the exercise's notebook (lesson or lab) passes to `choose`, as Python values."""
    chapter = f"{int(exercise.split('.')[0]):02d}"
    found = []
    for path in sorted(ROOT.glob(f"notebooks/{chapter}-*.ipynb")) + sorted(ROOT.glob(f"notebooks/labs/{chapter}-*")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "code":
                found += [ast.literal_eval(call.args[1]) for call in _calls(cell.source, exercise)]
    assert found, f"no choose({exercise!r}, ...) in chapter {chapter}'s notebooks"
    assert all(f == found[0] for f in found), f"{exercise}: the notebook draws from two lists {found}"
    return list(found[0])


def check_options(exercise: str) -> list | None:
    """The options the hidden check passes to `choose` (a literal or a module constant), or None."""
    fn = checks(exercise).fn
    tree = ast.parse(inspect.getsource(fn))
    calls = _calls(ast.unparse(tree), exercise)
    if not calls:
        return None
    arg = calls[0].args[1]
    return list(fn.__globals__[arg.id] if isinstance(arg, ast.Name) else ast.literal_eval(arg))


def variant_for(exercise: str, index: int) -> int:
    """A variant number whose `choose` draws option `index` (0 for the book's)."""
    opts = options(exercise)
    if index == 0:
        return 0
    for v in range(1, 500):
        os.environ[VARIANT_ENV] = str(v)
        try:
            if choose(exercise, opts) == opts[index]:
                return v
        finally:
            os.environ.pop(VARIANT_ENV, None)
    raise AssertionError(f"{exercise}: no variant in 1..499 draws option {index}")


# ---- each exercise: its namespace, its expected value, how the book would print it ----------------------

@dataclass(frozen=True)
class Exercise:
    namespace: Callable[[Any, Any], dict]  # (option, answer) -> what the hidden check reads
    expected: Callable[[Any], Any]  # option -> the answer that gets full marks
    printed: Callable[[Any], list[str]]  # expected value -> regular expressions the book would show it as
    constants: Callable[[Any], list] = field(default=lambda option: [])  # guesses of the answer's type


def _number(n: int) -> list[str]:
    if n < 10:
        return []
    return [rf"(?<![\d.])(?<!\d,){n}(?!\d|[.,]\d)"]


@cache
def _ranked_sections() -> list[tuple[str, str]]:
    from ragcourse.corpus import load_corpus, sections

    found = {(d.id, s.title): s.end - s.start for d in load_corpus() for s in sections(d.text) if s.headed}
    return sorted(found, key=lambda k: (-found[k], k[0], k[1]))


def _best_size(low: int) -> int:
    losses = checks("2.2").fn.__globals__["_blind_losses"](low)
    return min(losses, key=lambda size: (losses[size], size))


def _half_width_n(half: float) -> int:
    from ragcourse.evaluation import wilson

    return next(n for n in range(2, 100_000, 2) if (wilson(n // 2, n)[1] - wilson(n // 2, n)[0]) / 2 <= half)


def _unreachable_ns(size: int, answer) -> dict:
    corpus, questions, qs, _ = _unreachable(size)
    return {"corpus": corpus, "questions": questions, "qs": qs, "answer_unreachable": answer}


@cache
def _destroyed_per_genre(target: int) -> dict[str, int]:
    from ragcourse.chunking import chunk_corpus
    from ragcourse.evaluation import answers_destroyed
    from ragcourse.genres import GENRES, load_genre
    from ragcourse.groundtruth import load_genre_questions

    return {genre: len(answers_destroyed(chunk_corpus(load_genre(genre), "A", target=target),
                                         [q.needle for q in load_genre_questions(genre, corpus=load_genre(genre))]))
            for genre in GENRES}


def _cell(chapter: str, needle: str) -> str:
    (source,) = [c.source for c in nbformat.read(next(ROOT.glob(f"notebooks/{chapter}-*.ipynb")), as_version=4).cells
                 if c.cell_type == "code" and needle in c.source]
    return source


@cache
def _synced_folder() -> Path:
    """Chapter 8's synced folder, built by the notebook's own cell (its syncs replaced by no-ops)."""
    from ragcourse.corpus import load_corpus, write_sections

    work = Path(tempfile.mkdtemp(prefix="kit-variants-"))
    atexit.register(shutil.rmtree, work, True)
    nothing = SimpleNamespace(summary=lambda: "", chunks=[])
    ns = {"WORK": work, "by_id": {d.id: d for d in load_corpus()}, "write_sections": write_sections, "SETTINGS": {},
          "index_sync": SimpleNamespace(sync_folder=lambda *a, **k: nothing),
          "index_format": SimpleNamespace(load=lambda path: nothing), "print": lambda *a, **k: None}
    exec(_cell("08", "sync_docs, sync_index ="), ns)  # noqa: S102 - the book's own cell, with stand-ins
    return ns["sync_docs"]


@cache
def _edited(option: tuple) -> tuple[Path, str]:
    """Exercise 8.5's edited file and its original text, as the notebook's set-up cell leaves them."""
    folder = _synced_folder()
    copy = folder.parent / f"8.5-{options('8.5').index(option)}"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(folder, copy)
    ns = {"sync_docs": copy, "choose": lambda exercise, opts: option, "synced": SimpleNamespace(chunks=[]),
          "print": lambda *a, **k: None}
    exec(_cell("08", 'choose("8.5"'), ns)  # noqa: S102 - the book's own set-up cell
    return ns["target"], ns["original"]


def _edit_ns(option: tuple, answer) -> dict:
    target, original = _edited(option)
    why = "the edit changes the header that every chunk of the file carries"
    return {"target": target, "original": original, "answer_8_5": {"predicted": answer, "measured": answer,
                                                                   "why": why}}


EXERCISES: dict[str, Exercise] = {
    "1.1": Exercise(lambda rank, answer: {"answer_section": answer}, lambda rank: _ranked_sections()[rank - 1],
                    lambda pair: [re.escape(pair[0]) + r".{0,120}?" + re.escape(pair[1])]),
    "2.2": Exercise(lambda low, answer: {"best_size": answer}, _best_size, _number,
                    lambda low: [low, low + 512]),
    "3.3": Exercise(lambda half, answer: {"HALF_3_3": half, "answer_n": answer}, _half_width_n, _number,
                    lambda half: [2, 100, 1000]),
    "5.4": Exercise(_unreachable_ns, lambda size: _unreachable(size)[3], _number, lambda size: [0, 420]),
    "8.5": Exercise(_edit_ns, lambda option: checks("8.5").fn.__globals__["_new_texts"](*_edited(option)),
                    lambda n: [rf"""['"]predicted['"]: {n}(?!\d)"""], lambda option: [0, 1]),
    "9.3": Exercise(lambda target, answer: {"TARGET_9_3": target, "answer_9_3": answer}, _destroyed_per_genre,
                    lambda counts: [re.escape(repr(counts))],
                    lambda target: [dict.fromkeys(_destroyed_per_genre(target), n) for n in (0, 1)]),
}


def _score(exercise: str, index: int, answer) -> tuple[float, str]:
    option = options(exercise)[index]
    os.environ[VARIANT_ENV] = str(variant_for(exercise, index))
    try:
        return score(checks(exercise), EXERCISES[exercise].namespace(option, answer))
    finally:
        os.environ.pop(VARIANT_ENV, None)


@cache
def expected(exercise: str) -> list:
    """Each option's expected value, in the notebook's order."""
    return [EXERCISES[exercise].expected(option) for option in options(exercise)]


# ---- the tests ---------------------------------------------------------------------------------------------

def test_every_exercise_a_check_draws_a_constant_for_draws_from_its_notebooks_options():
    """The check and the notebook must draw the same constant in every term (2.2 and 5.4 list theirs twice)."""
    drawn = [ex for ex in checks_of_every_chapter() if check_options(ex) is not None]
    assert len(drawn) >= 5
    assert {ex: check_options(ex) for ex in drawn} == {ex: options(ex) for ex in drawn}


def checks_of_every_chapter() -> list[str]:
    from tests.test_kit_fairness import every_exercise

    return every_exercise()


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_each_variant_has_its_own_answer_and_no_constant_answers_one(exercise):
    """Issue 45: 8.5's count was 1 in every variant, 2.2's size for LOW=400 and 5.4's count for strategy B
    were the book's published answers. Each option's expected value gets full marks (so it is the right
    value to search the book for); another option's value, or a constant of the answer's type (8.5's with
    `measured` set equal to it), less, with feedback that does not show the expected value (issue 44)."""
    hidden, values = checks(exercise), expected(exercise)
    assert len(values) >= 2
    for i, value in enumerate(values):
        assert _score(exercise, i, value)[0] == hidden.points, f"{exercise}: option {i}'s own answer {value!r}"
        guesses = [v for j, v in enumerate(values) if j != i] + EXERCISES[exercise].constants(options(exercise)[i])
        for guess in guesses:
            points, feedback = _score(exercise, i, guess)
            assert points < hidden.points, f"{exercise}: {guess!r} answers option {i}"
            whole = rf"(?<![\d.]){value}(?!\d)" if isinstance(value, int) else re.escape(str(value))
            shown = [p for p in [*EXERCISES[exercise].printed(value), whole] if re.search(p, feedback)]
            assert not shown, f"{exercise}: the feedback on {guess!r} shows option {i}'s answer: {feedback}"


def _pages() -> dict[str, str]:
    if not (HTML / "intro.html").is_file():
        missing(f"the book is not built: {HTML} is missing (run `make book`)")
    from tests.test_book_text import _pages as pages
    from tests.test_book_text import page_text

    return {p.relative_to(HTML).as_posix(): page_text(p) for p in pages()}


@pytest.fixture(scope="module")
def book() -> dict[str, str]:
    return _pages()


def _where(exercise: str, value, pages: dict[str, str], guide_only: bool) -> Iterator[str]:
    """Where the book shows `value` as the module's rule says: printed as the book prints it, near the exercise."""
    chapter = f"{int(exercise.split('.')[0]):02d}-"
    for pattern in EXERCISES[exercise].printed(value):
        for name, text in pages.items():
            near = name == "instructor-guide.html" or not guide_only and Path(name).name.startswith(chapter)
            if near and (match := re.search(pattern, text)):
                yield f"{name}: ...{text[max(0, match.start() - 60):match.end() + 60]}..."


@pytest.mark.parametrize("exercise", sorted(EXERCISES))
def test_the_public_book_shows_no_answer_of_a_terms_variant(exercise, book):
    """The instructor guide's page shows no option's answer; the other pages none but the book's own."""
    found = []
    for i, value in enumerate(expected(exercise)):
        found += [f"option {i} ({value!r}) on {hit}" for hit in _where(exercise, value, book, guide_only=i == 0)]
    assert found == []


def test_the_book_search_finds_what_it_looks_for(book):
    """The search is not blind: the book's own variant's answer is on its chapter's page where it is shown."""
    assert list(_where("3.3", expected("3.3")[0], book, guide_only=False)), "3.3's 382, in the book's solution"
    assert list(_where("8.5", expected("8.5")[0], book, guide_only=False)), "8.5's printed answer"
    fake = {"instructor-guide.html": f"| 2.2 | value | 2 | the best size is {expected('2.2')[1]} |"}
    assert list(_where("2.2", expected("2.2")[1], fake, guide_only=True))
