"""Chunkers for four document types: legal, API reference, support threads, wiki (chapter 9).

The field report prescribes one chunker per genre; this module implements each one as a pure text
function with chapter 2's `Chunk` contract: `content == document.text[start:end]`, `text` is
chapter 2's header line plus the content, chunks come in document order, and every non-whitespace
character outside the `## ` heading lines lies in a chunk. The budget `target` (characters, 512 by
default, as strategy E) holds except for a unit that cannot be split (one sentence piece).

- `clause_chunk` (legal): recursive, clause-aware: sections, then numbered clauses (`1.`, `1.1.`,
  `(a)`, `(i)`, `Section 5 –` ...), then paragraphs, then sentences. A clause that fits is never cut.
- `function_chunk` (API): one `## name(signature)` section per function; an over-long one is cut at
  numpydoc sections (Parameters, Returns, Raises ... over a dashed line), then paragraphs, entries,
  sentences. Every piece keeps the signature in its header.
- `semantic_chunk` (threads): cut between adjacent sentences (or paragraphs) whose embedding
  similarity is below a threshold, or whose distance is above a percentile of the document's.
- `llm_chunk` (wiki, "agentic"): SmolLM2 reads numbered paragraphs and names where topics start;
  `heading_chunk` is the rule-based alternative (sections, sub-headings, then paragraphs).

Left out: token budgets, clause numbering checked for consistency (a roman `(i)` and the letter
`(i)` look alike; we read `(i)`, `(v)`, `(x)` as roman), LangChain's sentence windows (we compare
single sentences; semantic cuts never cross a `## ` section), overlapping windows of paragraphs for
the model, and any model call outside `ragcourse.models` (callers pass `embed` / `ask`).
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from ragcourse.chunking import TARGET, Chunk, Span, header, pack, paragraph_spans, sentence_spans, trim
from ragcourse.corpus import Document, Section, sections
from ragcourse.precision import rounded_scores
from ragcourse.words import collapse

#: A cutter returns the cut positions it sees inside `text[start:end]` (the caller drops the edges).
Cutter = Callable[[str, int, int], list[int]]


# --------------------------------------------------------------------------- shared machinery

def paragraph_cuts(text: str, start: int, end: int) -> list[int]:
    """Where paragraphs start.

    >>> paragraph_cuts("a\\n\\nb", 0, 4)
    [0, 3]
    """
    return [s for s, _ in paragraph_spans(text, start, end)]


def sentence_cuts(text: str, start: int, end: int) -> list[int]:
    """Where sentence pieces start.

    >>> sentence_cuts("Hi. Yes.", 0, 8)
    [0, 4]
    """
    return [s for s, _ in sentence_spans(text, start, end)]


def recursive_spans(text: str, start: int, end: int, cutters: Sequence[Cutter], target: int) -> list[Span]:
    """Trimmed spans of `text[start:end]`: a piece that fits stays whole, else the first cutter with
    cuts inside splits it, pieces recurse and are packed back up to `target`.

    >>> recursive_spans("One. Two.\\n\\nThree.", 0, 17, [paragraph_cuts, sentence_cuts], 9)
    [(0, 9), (11, 17)]
    """
    span = trim(text, (start, end))
    if span is None:
        return []
    if span[1] - span[0] <= target:
        return [span]
    for cutter in cutters:
        cuts = sorted({c for c in cutter(text, *span) if span[0] < c < span[1]})
        if cuts:
            bounds = [span[0], *cuts, span[1]]
            pieces = [p for a, b in pairwise(bounds) for p in recursive_spans(text, a, b, cutters, target)]
            return pack(pieces, target)
    return [span]  # nothing left to cut at: one sentence longer than the budget


def _check_target(target: int) -> None:
    if not isinstance(target, int) or target <= 0:
        raise ValueError(f"target must be a positive number of characters, got {target!r}")


def _assemble(document: Document, titled: Sequence[tuple[str, Span]], strategy: str) -> list[Chunk]:
    """Chunks with chapter 2's header line, numbered in document order."""
    out = []
    for i, (title, (s, e)) in enumerate(titled):
        content = document.text[s:e]
        out.append(Chunk(document.id, document.title, title, s, e, content,
                         header(document.title, title) + "\n" + content, strategy, i))
    return out


def _by_section(document: Document, split: Callable[[Section], list[Span]], strategy: str,
                target: int) -> list[Chunk]:
    _check_target(target)
    return _assemble(document, [(sec.title, sp) for sec in sections(document.text) for sp in split(sec)], strategy)


# --------------------------------------------------------------------------- legal: clauses

#: A clause marker at a line start: "Section 5", "Article 2", "§ 3", "1.", "1.1", "2.3.4.", "(a)", "(iv)", "a.", "B)".
CLAUSE = re.compile(
    r"^[ \t]*(?:(?P<sec>(?:Section|SECTION|Article|ARTICLE|§)[ \t]*\d+)"
    r"|(?P<num>\d{1,3}(?:\.\d{1,3})+)\.?(?=[ \t])|(?P<num1>\d{1,3})[.)](?=[ \t])"
    r"|\((?P<par>[A-Za-z]{1,4}|\d{1,3})\)(?=[ \t])|(?P<let>[A-Za-z])[.)](?=[ \t]))", re.MULTILINE)


def clause_style(match: re.Match) -> str:
    """The numbering style of a CLAUSE match: "Section", "1", "1.1", "(a)", "(i)", "(A)", "(1)", "a.", "A."."""
    if match["sec"]:
        return "Section"
    if match["num"] or match["num1"]:
        return ".".join(str(i + 1) for i in range((match["num"] or "1").count(".") + 1))
    if (par := match["par"]) is not None:
        if par.isdigit():
            return "(1)"
        return "(i)" if re.fullmatch(r"[ivx]+", par) else "(a)" if par.islower() else "(A)"
    return "a." if match["let"].islower() else "A."


def clause_marks(text: str) -> list[tuple[int, int]]:
    """(line start, depth) of each clause marker; a style's depth is its rank of first appearance.

    >>> clause_marks("1. A\\n(a) b\\n(b) c\\n2. D")
    [(0, 0), (5, 1), (11, 1), (17, 0)]
    """
    ranks: dict[str, int] = {}
    out = []
    for m in CLAUSE.finditer(text):
        out.append((m.start(), ranks.setdefault(clause_style(m), len(ranks))))
    return out


def clause_cutter(text: str) -> Cutter:
    """A cutter at the shallowest clause markers strictly inside the span (so a clause's own marker never cuts)."""
    marks = clause_marks(text)
    starts = [p for p, _ in marks]

    def cuts(text: str, start: int, end: int) -> list[int]:
        inside = marks[bisect_right(starts, start):bisect_left(starts, end)]
        top = min((d for _, d in inside), default=None)
        return [p for p, d in inside if d == top]
    return cuts


def clause_chunk(document: Document, target: int = 512) -> list[Chunk]:
    """Legal text: sections, then clauses by depth, then paragraphs, then sentences; a clause that fits stays whole.

    >>> [c.content for c in clause_chunk(Document("d", "D", "1. Cap.\\n(a) One.\\n(b) Two.\\n2. End."), 24)]
    ['1. Cap.\\n(a) One.', '(b) Two.\\n2. End.']
    """
    cutters = [clause_cutter(document.text), paragraph_cuts, sentence_cuts]
    return _by_section(document, lambda s: recursive_spans(document.text, s.body, s.end, cutters, target),
                       "clauses", target)


# --------------------------------------------------------------------------- API reference: functions

#: A numpydoc section title: a line of words over a line of at least three dashes.
NUMPYDOC_SECTION = re.compile(r"^[ \t]*[A-Za-z][A-Za-z ]*\r?\n[ \t]*-{3,}[ \t]*\r?$", re.MULTILINE)
#: A numpydoc entry: a line that starts at the margin, followed by an indented line ("G : graph\n    A graph").
NUMPYDOC_ENTRY = re.compile(r"^(?=\S)[^\n]*\n(?=[ \t]+\S)", re.MULTILINE)


def numpydoc_cuts(text: str, start: int, end: int) -> list[int]:
    """Where numpydoc sections start (the title line).

    >>> numpydoc_cuts("Sum.\\n\\nRaises\\n------\\nE", 0, 21)
    [6]
    """
    return [m.start() for m in NUMPYDOC_SECTION.finditer(text, start, end)]


def entry_cuts(text: str, start: int, end: int) -> list[int]:
    """Where numpydoc entries start.

    >>> entry_cuts("a : int\\n  A.\\nb : str\\n  B.", 0, 24)
    [0, 13]
    """
    return [m.start() for m in NUMPYDOC_ENTRY.finditer(text, start, end)]


def function_chunk(document: Document, target: int = TARGET) -> list[Chunk]:
    """API reference: one chunk per `## name(signature)` section; an over-long one is cut at numpydoc sections.

    >>> [(c.section, c.content) for c in function_chunk(Document("m", "M", "## f(x)\\nDouble x.\\n"))]
    [('f(x)', 'Double x.')]
    """
    cutters = [numpydoc_cuts, paragraph_cuts, entry_cuts, sentence_cuts]
    return _by_section(document, lambda s: recursive_spans(document.text, s.body, s.end, cutters, target),
                       "functions", target)


# --------------------------------------------------------------------------- support threads: semantic

#: What a semantic unit is: a sentence piece (within one paragraph) or a whole paragraph.
UNITS = ("sentence", "paragraph")


def unit_spans(text: str, start: int, end: int, unit: str = "sentence") -> list[Span]:
    """Trimmed sentences (never across a paragraph break) or paragraphs of `text[start:end]`.

    >>> unit_spans("Hi. Yes\\n\\nNo.", 0, 12)
    [(0, 3), (4, 7), (9, 12)]
    """
    if unit not in UNITS:
        raise ValueError(f"unit={unit!r}: expected one of {list(UNITS)}")
    paragraphs = paragraph_spans(text, start, end)
    if unit == "sentence":
        paragraphs = [s for p in paragraphs for s in sentence_spans(text, *p)]
    return [t for t in (trim(text, p) for p in paragraphs) if t is not None]


def adjacent_similarities(vectors: np.ndarray) -> np.ndarray:
    """Cosine similarity of each unit vector with the next, rounded to `precision.DECIMALS`.

    >>> adjacent_similarities(np.array([[1.0, 0.0], [0.6, 0.8], [0.6, 0.8]])).tolist()
    [0.6, 1.0]
    """
    vectors = np.asarray(vectors, dtype=np.float64)
    return rounded_scores(np.sum(vectors[:-1] * vectors[1:], axis=1))


def _check_breakpoint(threshold: float | None, percentile: float | None) -> None:
    if (threshold is None) == (percentile is None):
        raise ValueError(f"give exactly one of threshold={threshold!r} and percentile={percentile!r}")
    if threshold is not None and not -1.0 <= threshold <= 1.0:
        raise ValueError(f"threshold={threshold!r}: expected a cosine similarity in [-1, 1]")
    if percentile is not None and not 0.0 <= percentile <= 100.0:
        raise ValueError(f"percentile={percentile!r}: expected a number in [0, 100]")


def semantic_breaks(similarities: Sequence[float], threshold: float | None = None,
                    percentile: float | None = None) -> list[int]:
    """Gaps i (unit i starts a new chunk, i >= 1) where similarity(i-1, i) < threshold, or where the
    distance 1 - similarity is above the `percentile`-th percentile of all the gaps' distances.

    >>> semantic_breaks([0.9, 0.2, 0.8], threshold=0.5), semantic_breaks([0.9, 0.2, 0.8], percentile=50)
    ([2], [2])
    """
    _check_breakpoint(threshold, percentile)
    sims = rounded_scores(similarities)
    if threshold is not None:
        return [i + 1 for i, s in enumerate(sims) if s < threshold]
    if len(sims) == 0:
        return []
    distances = rounded_scores(1.0 - sims)
    cutoff = rounded_scores([np.percentile(distances, percentile)])[0]
    return [i + 1 for i, d in enumerate(distances) if d > cutoff]


#: LangChain's SemanticChunker default: cut where the distance is in the document's top 5 %.
SEMANTIC_PERCENTILE = 95.0


def _unit_groups(text: str, units: list[Span], starts: set[int], target: int) -> list[Span]:
    """Contiguous runs of `units`, a new run at each index in `starts`; a run over `target` is
    packed from its units (a unit over `target` cut at sentences first)."""
    bounds = [0, *sorted(i for i in starts if 0 < i < len(units)), len(units)]
    out: list[Span] = []
    for run in (units[a:b] for a, b in pairwise(bounds) if b > a):
        if run[-1][1] - run[0][0] <= target:
            out.append((run[0][0], run[-1][1]))
        else:
            out += pack([p for u in run for p in recursive_spans(text, *u, [sentence_cuts], target)], target)
    return out


def semantic_chunk(document: Document, embed: Callable[[list[str]], np.ndarray], target: int = TARGET,
                   threshold: float | None = None, percentile: float | None = None,
                   unit: str = "sentence") -> list[Chunk]:
    """Threads: sections, then cuts between adjacent units where `embed`'s unit vectors drift apart.

    `embed(texts)` returns one unit vector per text (e.g. `ragcourse.dense.load_embedder().encode`).
    Without `threshold` or `percentile`, `percentile=SEMANTIC_PERCENTILE`.
    """
    percentile = SEMANTIC_PERCENTILE if threshold is None and percentile is None else percentile
    _check_breakpoint(threshold, percentile)
    _check_target(target)
    text, secs = document.text, sections(document.text)
    units = [unit_spans(text, sec.body, sec.end, unit) for sec in secs]
    flat = [u for us in units for u in us]
    vectors = np.asarray(embed([text[s:e] for s, e in flat])) if flat else np.zeros((0, 1))
    if vectors.ndim != 2 or len(vectors) != len(flat):
        raise ValueError(f"embed returned shape {vectors.shape} for {len(flat)} texts; expected one row per text")
    bounds = np.cumsum([0, *map(len, units)])
    sims = [adjacent_similarities(vectors[a:b]) if b - a > 1 else np.zeros(0) for a, b in pairwise(bounds)]
    gap_owner = [(k, i + 1) for k, s in enumerate(sims) for i in range(len(s))]
    chosen = semantic_breaks(np.concatenate([np.zeros(0), *sims]), threshold, percentile)
    starts: list[set[int]] = [set() for _ in secs]
    for g in chosen:
        k, i = gap_owner[g - 1]
        starts[k].add(i)
    titled = [(sec.title, sp) for sec, us, st in zip(secs, units, starts, strict=True)
              for sp in _unit_groups(text, us, st, target)]
    return _assemble(document, titled, "semantic")


# --------------------------------------------------------------------------- wiki: breaks chosen by a model

#: Paragraphs shown to the model per call, characters shown of each, and the answer's token budget.
LLM_WINDOW = 10
LLM_SHOW = 160
LLM_TOKENS = 30
BREAKS_PROMPT = ("Here are numbered paragraphs from one wiki page.\n\n{paragraphs}\n\n"
                 "Which paragraphs begin a new topic? Reply with their numbers only, separated by commas.")
#: What an answer may hold besides its numbers ("Answer: paragraphs 3 and 7 begin new topics.").
ANSWER_WORDS = re.compile(r"\b(?:paragraphs?|and|answer|the|are|is|begins?|starts?|new|topics?)\b|[\s\[\](),.;:&#-]",
                          re.IGNORECASE)


@dataclass(frozen=True)
class ParsedBreaks:
    """An answer read: paragraph numbers (2..n) that start a new chunk, a status, every integer seen.

    Only an "ok" status places breaks; "no break", "every paragraph", "out of range", "counting" (the reply
    counts 1, 2, 3, ..., echoing the numbering), "prose" (the numbers sit in other text) and "unparseable"
    fall back to no break.
    """

    breaks: tuple[int, ...]
    status: str
    numbers: tuple[int, ...]


@dataclass(frozen=True)
class BreakCall:
    """One model call: the window's first paragraph (0-based, in the document), prompt, answer, parse."""

    first: int
    prompt: str
    answer: str
    parsed: ParsedBreaks


def breaks_prompt(paragraphs: Sequence[str], show: int = LLM_SHOW, template: str = BREAKS_PROMPT) -> str:
    """The prompt (`template` with `{paragraphs}`): paragraphs numbered from 1, whitespace collapsed, cut to `show`.

    >>> breaks_prompt(["Cats purr.", "Dogs\\nbark."]).splitlines()[2:4]
    ['[1] Cats purr.', '[2] Dogs bark.']
    """
    lines = [f"[{i}] {collapse(p)[:show]}" for i, p in enumerate(paragraphs, 1)]
    return template.format(paragraphs="\n".join(lines))


def _prose(answer: str) -> bool:
    """Does the answer hold words other than ANSWER_WORDS? `_prose("3. It flows east.") -> True`."""
    return bool(ANSWER_WORDS.sub("", re.sub(r"\d+", "", answer)))


def _counts(numbers: Sequence[int]) -> bool:
    """Are the distinct numbers a run 1, 2, 3, ... or 2, 3, 4, ... (three or more)? `_counts([1, 1, 2, 3]) -> True`."""
    distinct = sorted(set(numbers))
    return len(distinct) >= 3 and distinct[0] in (1, 2) and distinct == list(range(distinct[0], distinct[-1] + 1))


def parse_breaks(answer: str, n: int) -> ParsedBreaks:
    """Read a reply about `n` paragraphs: integers in 2..n are breaks (1 always starts); anything else is named.

    >>> parse_breaks("Paragraphs 3 and 5.", 6)
    ParsedBreaks(breaks=(3, 5), status='ok', numbers=(3, 5))
    >>> [parse_breaks(a, 9).status for a in ("2, 3, 4, 5, 6, 7, 8, 9", "[1] [2] [3]", "none", "1. Cats purr.")]
    ['every paragraph', 'counting', 'unparseable', 'prose']
    """
    numbers = tuple(int(x) for x in re.findall(r"\d+", answer))
    valid = tuple(sorted({k for k in numbers if 2 <= k <= n}))
    if not numbers:
        status = "unparseable"
    elif _prose(answer):
        status = "prose"
    elif not any(1 <= k <= n for k in numbers):
        status = "out of range"
    elif not valid:
        status = "no break"
    elif len(valid) == n - 1:
        status = "every paragraph"
    elif _counts(numbers):
        status = "counting"
    else:
        status = "ok"
    return ParsedBreaks(valid if status == "ok" else (), status, numbers)


def body_paragraphs(document: Document) -> list[Span]:
    """Trimmed paragraphs of every section body (heading lines left out), in document order."""
    spans = (trim(document.text, p) for sec in sections(document.text)
             for p in paragraph_spans(document.text, sec.body, sec.end))
    return [p for p in spans if p is not None]


def llm_break_calls(document: Document, ask: Callable[[str], str], window: int = LLM_WINDOW,
                    template: str = BREAKS_PROMPT) -> list[BreakCall]:
    """Ask `ask` (prompt -> reply) about each window of `window` paragraphs; windows of one are skipped."""
    if not isinstance(window, int) or window < 2:
        raise ValueError(f"window={window!r}: expected an integer >= 2 (paragraphs per call)")
    paras, calls = body_paragraphs(document), []
    for first in range(0, len(paras), window):
        block = [document.text[s:e] for s, e in paras[first:first + window]]
        if len(block) > 1:
            prompt = breaks_prompt(block, template=template)
            answer = ask(prompt)
            calls.append(BreakCall(first, prompt, answer, parse_breaks(answer, len(block))))
    return calls


def break_offsets(document: Document, calls: Sequence[BreakCall]) -> set[int]:
    """Character offsets of the paragraphs the calls chose (only "ok" answers count)."""
    paras = body_paragraphs(document)
    return {paras[c.first + k - 1][0] for c in calls for k in c.parsed.breaks}


def chunk_at_breaks(document: Document, breaks: Collection[int], target: int = TARGET,
                    strategy: str = "breaks") -> list[Chunk]:
    """Sections, cut again before each paragraph starting at an offset in `breaks`, then packed to `target`.

    >>> [c.content for c in chunk_at_breaks(Document("w", "W", "A.\\n\\nB.\\n\\nC."), {4})]
    ['A.', 'B.\\n\\nC.']
    """
    cutters = [paragraph_cuts, sentence_cuts]

    def split(sec: Section) -> list[Span]:
        at = [sec.body, *sorted(b for b in breaks if sec.body < b < sec.end), sec.end]
        return [sp for a, b in pairwise(at) for sp in recursive_spans(document.text, a, b, cutters, target)]
    return _by_section(document, split, strategy, target)


def smollm_ask(prompt: str) -> str:
    """SmolLM2-135M's greedy reply (through `ragcourse.models.generate`, `LLM_TOKENS` new tokens)."""
    from ragcourse import models

    return models.generate(prompt, LLM_TOKENS)[0]


def llm_chunk(document: Document, target: int = TARGET, ask: Callable[[str], str] | None = None,
              window: int = LLM_WINDOW) -> list[Chunk]:
    """Wiki ("agentic"): the model names topic starts per window of paragraphs; bad answers add no break."""
    calls = llm_break_calls(document, ask or smollm_ask, window)
    return chunk_at_breaks(document, break_offsets(document, calls), target, "llm-breaks")


#: A sub-heading line (`### ` to `###### `): inside a `## ` section it is paragraph text, so a break.
SUBHEADING = re.compile(r"#{3,6} \S")


def heading_chunk(document: Document, target: int = TARGET) -> list[Chunk]:
    """Wiki without a model: sections, then a cut before every sub-heading paragraph, then paragraphs.

    >>> [c.content for c in heading_chunk(Document("w", "W", "## A\\nx.\\n\\n### B\\ny."))]
    ['x.', '### B\\ny.']
    """
    breaks = {s for s, _ in body_paragraphs(document) if SUBHEADING.match(document.text, s)}
    return chunk_at_breaks(document, breaks, target, "headings")


# --------------------------------------------------------------------------- one chunker per genre

#: The genre chunker of each genre of `ragcourse.genres` (`semantic_chunk` also needs `embed`).
GENRE_CHUNKERS: dict[str, Callable[..., list[Chunk]]] = {
    "legal": clause_chunk, "api": function_chunk, "threads": semantic_chunk, "wiki": llm_chunk,
}


def genre_chunker(genre: str) -> Callable[..., list[Chunk]]:
    """The chunker for `genre`; ValueError naming the valid genres otherwise.

    >>> genre_chunker("legal").__name__
    'clause_chunk'
    """
    if genre not in GENRE_CHUNKERS:
        raise ValueError(f"genre={genre!r}: expected one of {list(GENRE_CHUNKERS)}")
    return GENRE_CHUNKERS[genre]
