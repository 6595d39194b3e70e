"""Hidden checks for chapter 2 (chunking): run by the grader, never shipped.

Each check recomputes what it needs from the package and the student's namespace `ns`; none prints or
returns an expected value.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from kit.checks.compare import Partly, given, integer, reference
from kit.hidden import check
from ragcourse.book.exercises import choose
from ragcourse.chunking import chunk, chunk_corpus
from ragcourse.corpus import load_corpus
from ragcourse.evaluation import answers_destroyed
from ragcourse.groundtruth import load_questions

HAND_BUILT = [
    "",
    "short",
    "Supercalifragilisticexpialidocious antidisestablishmentarianism and floccinaucinihilipilification.",
    "| $\\geqq$ | \\geqq | $\\leqq$ | \\leqq | $\\sqrt[3n]{x^2-1}$ | \\frac{1}{2} |",
    'In order to do this, use Tools --> Options... --> Load-Save --> General and turn off "Size optimization".',
    "Naïve café façade – déjà vu — Ünïcödé résumé coöperation, with accents everywhere in the tail.",
    "```\n.. math::\n   :name: Fourier transform\n\n   (\\mathcal{F}f)(y) = \\frac{1}{\\sqrt{2\\pi}^{\\ n}}\n```",
]


def _tokenizer(ns: dict[str, Any]):
    if "tokenizer" in ns:
        return ns["tokenizer"]
    from ragcourse.models import load_embedder

    return load_embedder().tokenizer


def _tail_problem(tokenizer, fn, content: str, n: int) -> str | None:
    """What is wrong with fn(content, n) as the shortest word-start suffix of >= n word-pieces (None: right)."""
    try:
        tail = fn(content, n)
    except Exception as error:  # noqa: BLE001 - a student's function may raise anything
        return f"raised {type(error).__name__}"
    if not isinstance(tail, str) or not content.endswith(tail):
        return "did not return a suffix of its input"
    starts, words = _pieces(tokenizer, content)
    at = len(content) - len(tail)
    if len(starts) <= n:
        return None if at == 0 else "a text with n word-pieces or fewer should come back whole"
    word_starts = [s for i, s in enumerate(starts) if i == 0 or words[i] != words[i - 1]]
    if at not in word_starts:
        return "the tail does not start at the beginning of a word"
    if sum(s >= at for s in starts) < n:
        return "the tail holds fewer than n word-pieces"
    if any(w > at and sum(s >= w for s in starts) >= n for w in word_starts):
        return "a shorter tail starting at a word would also hold n word-pieces"
    return None


@cache  # the same for every student
def _contents() -> list[str]:
    return [c.content for c in chunk_corpus(load_corpus(), "D")][::13][:60]


_PIECES: dict[str, tuple[list[int], list]] = {}


def _pieces(tokenizer, content: str) -> tuple[list[int], list]:
    """The start offset and word number of each word-piece of `content` (kept: every student meets the same texts)."""
    if content not in _PIECES:
        enc = tokenizer(content, add_special_tokens=False, return_offsets_mapping=True)
        _PIECES[content] = ([s for s, _ in enc["offset_mapping"]], enc.word_ids())
    return _PIECES[content]


@check("2.1", points=3)
def token_tail_properties(ns):
    """token_tail(content, n) is the shortest word-start suffix holding >= n word-pieces, on 7 hand-built texts
    and 60 strategy-D contents, for n in (N_TAIL, 5, 40); half marks when only one group fails."""
    fn = given(ns, "token_tail")
    assert callable(fn), "token_tail should be a function"
    with reference("the tokenizer and the chunk contents"):
        tokenizer = _tokenizer(ns)
        contents = _contents()
    n_tail = choose("2.1", [16, 12, 20])
    groups = {"hand-built texts": HAND_BUILT, "corpus contents": contents}
    failures = {}
    for name, texts in groups.items():
        for n in (n_tail, 5, 40):
            problems = [p for p in (_tail_problem(tokenizer, fn, t, n) for t in texts) if p]
            if problems:
                failures[name] = f"{name}, for one of the n tried: {problems[0]}"
                break
    if not failures:
        return None
    feedback = "; ".join(failures.values())
    assert len(failures) < len(groups), feedback
    return Partly(0.5, feedback)


#: The exercise's LOW for each term (the book's first): no two share a best size, so none answers another.
LOWS_2_2 = [512, 200, 600]


def _blind_losses(low: int) -> dict[int, int]:
    """The needles blind chunks of each size in [low, low + 512] destroy (each size counted once per run)."""
    return {size: _blind_lost(size) for size in range(low, low + 513)}


@cache  # the same for every student: computed once per grading run
def _blind_lost(size: int) -> int:
    return sum(len(answers_destroyed(chunk(d, "A", target=size, overlap=0), needles)) for d, needles in _needles())


@cache
def _needles() -> list[tuple[Any, list[str]]]:
    """Each document that holds a needle, with its needles (a needle occurs in one document only)."""
    docs, questions = load_corpus(), load_questions()
    by_doc = [(d, [q.needle for q in questions if q.doc == d.id]) for d in docs]
    return [(d, needles) for d, needles in by_doc if needles]


@check("2.2", points=2)
def best_blind_size(ns):
    """best_size is the smallest blind size in [LOW, LOW + 512] that destroys the fewest needles (recomputed per
    document with the package); half marks for a size that ties on the fewest but is not the smallest."""
    low = choose("2.2", LOWS_2_2)
    answer = integer(given(ns, "best_size"), "best_size", low, low + 512)
    with reference("the needles each blind size destroys"):
        losses = _blind_losses(low)
    fewest = min(losses.values())
    assert losses[answer] == fewest, (
        f"blind chunks of {answer} characters destroy {losses[answer]}; some size destroys fewer")
    if answer == min(t for t, n in losses.items() if n == fewest):
        return None
    return Partly(0.5, f"{answer} destroys the fewest needles, but so does a smaller size: the text asks for "
                  "the smallest")


@check("2.3", points=1)
def prediction_made(ns):
    """Completion: predicted_destroyed and predicted_over_window are non-negative ints (destroyed at most the
    number of needles); prediction_reason has a few words (half marks without it)."""
    n = _questions()
    for name, top in (("predicted_destroyed", n), ("predicted_over_window", 100_000)):
        integer(given(ns, name), name, 0, top)
    reason = ns.get("prediction_reason")
    if isinstance(reason, str) and len(reason.split()) >= 3:
        return None
    return Partly(0.5, "both predictions are recorded; `prediction_reason` needs a sentence of at least 3 words")


@cache  # the same for every student
def _questions() -> int:
    return len(load_questions())
