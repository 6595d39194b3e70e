"""Six chunking strategies built from three ingredients (chapter 2).

A chunk is a character span of a document's canonical text. `Chunk.content` is exactly
`document.text[start:end]` (what a citation quotes); `Chunk.text` is what gets embedded: an
optional contextual header, an optional overlap copied from the previous chunk, then the content.
Offsets are carried along while cutting (spans of indices); they are never searched for with
`str.find`, which points at the wrong place as soon as a sentence repeats.

Ingredients:
- blind: cut every `target` characters without looking at the text (heading lines included);
- boundaries: never cut inside a paragraph; pack whole paragraphs greedily up to `target`
  characters, and split a paragraph longer than `target` at sentence ends;
- header: prefix `[Document title > Section]` (or `[Document title]`) and a newline to `text`;
- overlap: copy the previous chunk's last `overlap` characters of content (same document, across
  sections) in front of the content, joined by "" if the two chunks touch, else by one space.

A chunk's `section` is the title of the `## ` section its first character lies in; sections come
from `ragcourse.corpus.sections` (re-exported here), the one rule the book uses: a `## ` line inside
fenced code is code, not a heading.

The boundary rule follows the original chapter's TypeScript `chunkDocument` (transcribed in the tests
as a test oracle), with these deliberate deviations:
- text before a document's first `## ` heading is kept, as a section titled "" (the original
  chapter drops it);
- a `## ` heading on the document's last line, without a newline, is skipped like any other
  heading (the original chapter would emit it as content);
- a `## ` line inside fenced code (``` or ~~~) is not a heading (the original chapter would start
  a section);
- "\\r\\n" counts as one line break, so CRLF documents split into paragraphs like LF ones;
- "whitespace" is Python's (`str.strip`, `\\s`), not JavaScript's; the two differ only on rare
  control and format characters;
- lengths and offsets count Python characters (code points), not JavaScript's UTF-16 code units: a
  character outside the Basic Multilingual Plane (most emoji) counts 1 here and 2 there, which can
  move a cut (Devanagari, Telugu and combining marks count the same in both);
- only "\\n" starts a line for a `## ` heading; the original's multiline `^` also starts one after a
  lone "\\r", U+2028 or U+2029.

Left out: token-based budgets (the budget is characters), nested section paths (`### ` lines are
ordinary paragraph text), semantic or model-based chunking.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ragcourse.corpus import Document, Section, sections

#: Bump whenever the chunks produced for the same input change (the index records it).
PIPELINE_VERSION = "chunking-1"
#: The chunk budget in characters and the overlap, the original chapter's settings: every default in the
#: package reads these (`chunk`, shown in chapter 2, writes them out; tests/test_layout.py keeps them equal).
TARGET, OVERLAP = 512, 64

#: A paragraph: a maximal run of lines separated by single line breaks ("\n" or "\r\n").
PARAGRAPH = re.compile(r"(?:[^\r\n]|\r(?!\n))(?:[^\r\n]|\r(?!\n)|\r?\n(?!\r?\n))*")
#: A sentence piece: text up to and including its end punctuation and the whitespace after it.
SENTENCE = re.compile(r"[^.!?]*[.!?]*\s*")

Span = tuple[int, int]


@dataclass(frozen=True)
class Strategy:
    """One chunking strategy: which cutter, and whether to add a header and an overlap."""

    letter: str
    name: str
    cutter: str  # "blind" or "boundaries"
    header: bool
    overlap: bool


#: The six strategies, under the original chapter's letters.
STRATEGIES: dict[str, Strategy] = {
    "A": Strategy("A", "blind", "blind", header=False, overlap=False),
    "B": Strategy("B", "blind + overlap", "blind", header=False, overlap=True),
    "C": Strategy("C", "boundaries", "boundaries", header=False, overlap=False),
    "D": Strategy("D", "boundaries + overlap", "boundaries", header=False, overlap=True),
    "E": Strategy("E", "boundaries + header", "boundaries", header=True, overlap=False),
    "F": Strategy("F", "boundaries + header + overlap", "boundaries", header=True, overlap=True),
}


@dataclass(frozen=True)
class Chunk:
    """One chunk; `content == document.text[start:end]`, `text` is what gets embedded."""

    doc_id: str
    doc_title: str
    section: str
    start: int
    end: int
    content: str
    text: str
    strategy: str
    index: int  # position of the chunk within its document, from 0

    @property
    def id(self) -> str:
        """Stable identifier: document id and character range, e.g. `"quickstart#0-498"`."""
        return f"{self.doc_id}#{self.start}-{self.end}"


def paragraph_spans(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Paragraphs of `text[start:end]` as absolute spans; a blank line separates paragraphs.

    >>> paragraph_spans("a\\nb\\n\\nc")
    [(0, 3), (5, 6)]
    >>> paragraph_spans("a\\r\\nb\\r\\n\\r\\nc")  # CRLF
    [(0, 4), (8, 9)]
    """
    end = len(text) if end is None else end
    return [m.span() for m in PARAGRAPH.finditer(text, start, end)]


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[Span]:
    """Sentence pieces of `text[start:end]` (punctuation and trailing whitespace included).

    >>> sentence_spans("Hi. Yes! ok")
    [(0, 4), (4, 9), (9, 11)]
    """
    end = len(text) if end is None else end
    return [m.span() for m in SENTENCE.finditer(text, start, end) if m.end() > m.start()]


def pack(spans: Iterable[Span], target: int) -> list[Span]:
    """Greedily merge consecutive spans while first start to last end stays <= `target`.

    A single span longer than `target` is kept whole.
    Example: `pack([(0, 3), (5, 6), (8, 12)], target=6) -> [(0, 6), (8, 12)]`.
    """
    packs: list[Span] = []
    open_: Span | None = None
    for s, e in spans:
        if open_ is not None and e - open_[0] > target:
            packs.append(open_)
            open_ = None
        open_ = (open_[0], e) if open_ is not None else (s, e)
    if open_ is not None:
        packs.append(open_)
    return packs


def trim(text: str, span: Span) -> Span | None:
    """Shrink `span` to exclude whitespace at both edges; None if nothing else is left.

    >>> trim("  ab c \\n", (0, 8)), trim("a   b", (1, 4))
    ((2, 6), None)
    """
    s, e = span
    piece = text[s:e]
    stripped = piece.strip()
    if not stripped:
        return None
    lead = len(piece) - len(piece.lstrip())
    return (s + lead, s + lead + len(stripped))


def blind_spans(text: str, target: int) -> list[Span]:
    """Cut every `target` characters, then trim each piece (empty pieces are dropped).

    >>> blind_spans("abcd efgh", 5)
    [(0, 4), (5, 9)]
    """
    pieces = (trim(text, (i, min(i + target, len(text)))) for i in range(0, len(text), target))
    return [p for p in pieces if p is not None]


def boundary_spans(text: str, section: Section, target: int) -> list[Span]:
    """Paragraph-packed spans of one section's body; over-budget paragraphs split at sentences.

    Example: `boundary_spans("## T\\nab\\n\\ncd\\n\\nOne. Two.", Section("T", 0, 5, 22), 8)`
    -> `[(5, 11), (13, 17), (18, 22)]` ("ab\\n\\ncd", "One.", "Two.").
    """
    raw: list[Span] = []
    small: list[Span] = []
    for pf, pt in paragraph_spans(text, section.body, section.end):
        if pt - pf <= target:
            small.append((pf, pt))
            continue
        raw += pack(small, target)
        small = []
        raw += pack(sentence_spans(text, pf, pt), target)
    raw += pack(small, target)
    return [t for t in (trim(text, span) for span in raw) if t is not None]


def header(doc_title: str, section: str) -> str:
    """The contextual header line (without its newline).

    >>> header("Quickstart", "Lists"), header("Quickstart", "")
    ('[Quickstart > Lists]', '[Quickstart]')
    """
    return f"[{doc_title} > {section}]" if section else f"[{doc_title}]"


def overlap_prefix(previous: Chunk | None, start: int, overlap: int) -> str:
    """The previous chunk's last `overlap` characters of content, plus a joiner.

    The joiner is "" when the previous chunk ends where this one starts (a blind cut in a word), else " ".
    >>> previous = Chunk("d", "D", "", 0, 13, "one two three", "one two three", "B", 0)
    >>> overlap_prefix(previous, 14, 5), overlap_prefix(previous, 13, 5), overlap_prefix(None, 14, 5)
    ('three ', 'three', '')
    """
    if previous is None or overlap == 0:
        return ""
    joiner = "" if previous.end == start else " "
    return previous.content[-overlap:] + joiner


def strategy_for(letter: str) -> Strategy:
    """Look up a strategy by its letter; ValueError naming the valid letters otherwise."""
    if letter not in STRATEGIES:
        raise ValueError(f"unknown strategy {letter!r}; valid: {', '.join(STRATEGIES)}")
    return STRATEGIES[letter]


def _check_budget(target: int, overlap: int, uses_overlap: bool) -> None:
    if target <= 0:
        raise ValueError(f"target must be a positive number of characters, got {target!r}")
    if overlap < 0 or (uses_overlap and overlap >= target):
        raise ValueError(f"overlap must satisfy 0 <= overlap < target={target}, got {overlap!r}")


def _titled_spans(text: str, cutter: str, target: int) -> list[tuple[str, Span]]:
    """All spans of one document with the title of the section each one starts in."""
    secs = sections(text)
    if cutter == "boundaries":
        return [(sec.title, sp) for sec in secs for sp in boundary_spans(text, sec, target)]
    starts = [sec.start for sec in secs]
    return [(secs[bisect_right(starts, s) - 1].title, (s, e)) for s, e in blind_spans(text, target)]


def chunk(
    document: Document, strategy: str = "E", target: int = 512, overlap: int = 64
) -> list[Chunk]:
    """Chunk one document with strategy `strategy` (a letter of STRATEGIES).

    `overlap` must not be negative and, for the strategies that copy it (B, D, F), below `target`;
    the others ignore it, so `chunk(doc, "E", target=40)` needs no `overlap=0`.

    Example: `chunk(Document("d", "Doc", "## S\\nHello."))` -> one Chunk with section "S",
    start 5, end 11, content "Hello." and text "[Doc > S]\\nHello.".
    """
    spec = strategy_for(strategy)
    _check_budget(target, overlap, spec.overlap)
    out: list[Chunk] = []
    previous: Chunk | None = None
    for i, (title, (s, e)) in enumerate(_titled_spans(document.text, spec.cutter, target)):
        content = document.text[s:e]
        text = overlap_prefix(previous, s, overlap) + content if spec.overlap else content
        if spec.header:
            text = header(document.title, title) + "\n" + text
        previous = Chunk(document.id, document.title, title, s, e, content, text, spec.letter, i)
        out.append(previous)
    return out


def chunk_corpus(
    docs: Sequence[Document], strategy: str = "E", target: int = TARGET, overlap: int = OVERLAP
) -> list[Chunk]:
    """Chunk every document, in the given document order; overlap never crosses documents."""
    return [c for doc in docs for c in chunk(doc, strategy, target, overlap)]
