"""Honest citations: numbered sources, locators, and a checker for what the model wrote (chapter 7).

The model is shown numbered sources and asked to write `[1]`, `[2]`; it is never asked for a link.
The server, which knows which document and which offsets each number came from, attaches the
document, the section label and the locator afterwards. The quote shown to a reader is the chunk's
own `content` (the exact slice `doc.text[start:end]`), never the embedded `text` with its header
and overlap. Locators follow published fragment syntaxes: RFC 5147 `#char=`, the PDF Open
Parameters `#page=`, W3C Media Fragments `#t=`, and Excel's `Sheet!A1` sub-address. Since browsers
do not honour `#char=`, `text_fragment_url` also builds a WICG Text Fragment link.

The corpus's own bracketed numbers (docutils' footnote references, `[12]`) are escaped to `[^12]`
in the prompt, so a sentence the model copies can never carry them as citations; the quote kept on
the server stays the exact slice. A lexical support score (the share of a cited sentence's content
words found in the sources it cites) flags sentences their sources barely share words with.

Leaves out: checking that a cited source actually *supports* a sentence (entailment: the support
score ignores paraphrase, negation and word order), fuzzy sentence splitting (abbreviations such
as "e.g." split a sentence), and resolving identifiers.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import quote as _percent_encode

from .gate import NoAnswer, gate
from .words import WORD, claim_words, collapse

if TYPE_CHECKING:
    from .chunking import Chunk
    from .dense import Hit

#: The sentence the prompt asks the model to write, verbatim, when the sources lack the answer.
REFUSAL = "The sources do not contain the answer."
#: One format example, on another subject, that `build_context(..., example=True)` shows after the question.
FORMAT_EXAMPLE = ("EXAMPLE of the format (other sources, another question):\n"
                  "The meeting starts at nine [2]. Bring the signed form and your badge [1][3].")
#: A sentence with fewer words than this (citation markers not counted) is not a claim.
MIN_CLAIM_WORDS = 4
#: A cited sentence with a smaller share of its content words in the cited sources is unsupported.
SUPPORT_THRESHOLD = 0.5


def _number(x: float) -> str:
    """Shortest plain decimal for a locator: 132.40 -> '132.4', 12.0 -> '12'."""
    return f"{x:.3f}".rstrip("0").rstrip(".")


def _clock(seconds: float) -> str:
    """Seconds as [h:]m:ss.s for labels: 132.4 -> '2:12.4', 3725 -> '1:02:05.0'."""
    minutes, rest = divmod(seconds, 60)
    hours, minutes = divmod(int(minutes), 60)
    if hours:
        return f"{hours}:{minutes:02d}:{rest:04.1f}"
    return f"{minutes}:{rest:04.1f}"


@dataclass(frozen=True)
class CharRange:
    """Characters [start, end) of a document's canonical text; RFC 5147 `#char=start,end`."""

    start: int
    end: int

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            raise ValueError(f"CharRange needs 0 <= start <= end; got start={self.start}, "
                             f"end={self.end}")

    def fragment(self) -> str:
        return f"#char={self.start},{self.end}"

    def label(self) -> str:
        return f"characters {self.start}-{self.end}"


@dataclass(frozen=True)
class PdfPage:
    """One page of a PDF, counted from 1; PDF Open Parameters `#page=N`."""

    page: int

    def __post_init__(self) -> None:
        if isinstance(self.page, bool) or not isinstance(self.page, int) or self.page < 1:
            raise ValueError(f"PdfPage needs an integer page >= 1; got {self.page!r}")

    def fragment(self) -> str:
        return f"#page={self.page}"

    def label(self) -> str:
        return f"page {self.page}"


@dataclass(frozen=True)
class MediaTime:
    """A time range in seconds of audio or video; W3C Media Fragments `#t=start,end`."""

    start: float
    end: float

    def __post_init__(self) -> None:
        if not 0 <= self.start <= self.end:
            raise ValueError(f"MediaTime needs 0 <= start <= end seconds; got start={self.start}, "
                             f"end={self.end}")

    def fragment(self) -> str:
        return f"#t={_number(self.start)},{_number(self.end)}"

    def label(self) -> str:
        return f"{_clock(self.start)}-{_clock(self.end)}"


_CELL = re.compile(r"^\$?([A-Z]{1,3})\$?([1-9][0-9]*)$")
_MAX_COLUMN, _MAX_ROW = 16_384, 1_048_576  # XFD and the last row of an .xlsx sheet
_BAD_SHEET_CHARS = set("[]:*?/\\")


def _column_number(letters: str) -> int:
    """Spreadsheet column letters to a number: 'A' -> 1, 'Z' -> 26, 'AA' -> 27."""
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - ord("A") + 1
    return n


def _parse_cell(cell: str, cells: str) -> tuple[int, int]:
    """'B2' -> (column 2, row 2); ValueError naming the whole range when it is not A1 syntax."""
    match = _CELL.match(cell)
    if match is None:
        raise ValueError(f"not an A1 range: {cells!r} (expected e.g. 'B2' or 'B2:D9')")
    column, row = _column_number(match.group(1)), int(match.group(2))
    if column > _MAX_COLUMN or row > _MAX_ROW:
        raise ValueError(f"A1 range {cells!r} is outside a sheet (last cell is XFD1048576)")
    return column, row


@dataclass(frozen=True)
class SheetRange:
    """A sheet name and an A1 range, `SheetRange("Sheet1", "B2:D9")` -> `Sheet1!B2:D9`; with no W3C fragment for
    spreadsheets, the fragment is Excel's sub-address (`book.xlsx#Sheet1!B2:D9`), quoting names as needed."""

    sheet: str
    cells: str

    def __post_init__(self) -> None:
        if not self.sheet or len(self.sheet) > 31 or set(self.sheet) & _BAD_SHEET_CHARS:
            raise ValueError(f"bad sheet name {self.sheet!r}: 1-31 characters, none of "
                             f"{''.join(sorted(_BAD_SHEET_CHARS))}")
        corners = [_parse_cell(c, self.cells) for c in self.cells.split(":")]
        if len(corners) > 2:
            raise ValueError(f"not an A1 range: {self.cells!r} (expected e.g. 'B2' or 'B2:D9')")
        if len(corners) == 2 and (corners[0][0] > corners[1][0] or corners[0][1] > corners[1][1]):
            raise ValueError(f"A1 range {self.cells!r} must run from top-left to bottom-right")

    def address(self) -> str:
        """`Sheet1!B2:D9`, or `'Q1 sales'!B2` when the name needs quoting."""
        plain = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", self.sheet) is not None
        name = self.sheet if plain else "'" + self.sheet.replace("'", "''") + "'"
        return f"{name}!{self.cells}"

    def fragment(self) -> str:
        return "#" + _percent_encode(self.address(), safe="!:$'")

    def label(self) -> str:
        return f"sheet {self.sheet}, cells {self.cells}"


@dataclass(frozen=True)
class Citation:
    """What the server attaches to source [n]: document, section label, locator and the quote."""

    n: int
    doc_id: str
    doc_name: str
    label: str
    fragment: str
    quote: str
    distance: float

    def line(self) -> str:
        """One row of the table the reader sees (and the model never does)."""
        return (f"[{self.n}] {self.doc_id}  {self.label}  {self.fragment}  "
                f"d={self.distance:.3f}")


@dataclass(frozen=True)
class Context:
    """The prompt sent to the generator and the citations kept on the server side."""

    prompt: str
    citations: tuple[Citation, ...]


def section_label(chunk: Chunk) -> str:
    """The chunk's section title; its document's title when it has none (the preamble)."""
    return chunk.section or chunk.doc_title


def build_context(question: str, hits: Sequence[Hit], example: bool = False) -> Context:
    """Number the hits [1..n] in the order given and build the prompt plus the server-side table.

    The prompt asks for answers only from the sources, a `[n]` on every claim, no links, and the
    `REFUSAL` sentence (then stop) when the sources do not hold the answer. Each quote is shown with
    its own bracketed numbers escaped (`escape_markers`); the citation keeps the exact slice. With
    `example`, the sources and the question come first, then the rules and `FORMAT_EXAMPLE`: the 1.5B model of
    chapter 7 answers the chapter's own layout with a bare "[1]".
    """
    citations = tuple(
        Citation(n=i, doc_id=h.chunk.doc_id, doc_name=h.chunk.doc_title,
                 label=section_label(h.chunk),
                 fragment=CharRange(h.chunk.start, h.chunk.end).fragment(),
                 quote=h.chunk.content, distance=float(h.distance))
        for i, h in enumerate(hits, start=1)
    )
    blocks = "\n\n".join(f"[{c.n}] {c.doc_name} - {c.label}\n{escape_markers(c.quote)}"
                         for c in citations)
    if example:  # sources, question, then the rules and one example: the order a small model follows
        prompt = (f"SOURCES\n{blocks}\n\nQUESTION\n{question}\n\n"
                  "Answer the question in one to three sentences from the sources above. End every sentence "
                  "with the number of its source in brackets, as in the example. Write no links, URLs or paper "
                  f'identifiers. Only if no source says anything about the question, write "{REFUSAL}"'
                  f"\n\n{FORMAT_EXAMPLE}\n\nANSWER")
        return Context(prompt=prompt, citations=citations)
    prompt = (
        "Answer the question using ONLY the numbered sources below.\n"
        "Put the number of the source after every claim, like [1] or [2]. "
        "Do not write links, URLs or paper identifiers.\n"
        f'If the sources do not contain the answer, write "{REFUSAL}" and stop.\n\n'
        f"SOURCES\n{blocks}\n\nQUESTION\n{question}"
    )
    return Context(prompt=prompt, citations=citations)


def text_fragment_url(base_url: str, quote: str, words: int = 4) -> str:
    """A WICG Text Fragment link that scrolls a browser to `quote` and highlights it.

    Short quotes (up to 2 * `words` words) become `#:~:text=<quote>`; longer ones become
    `#:~:text=<first words>,<last words>`, a range the browser selects end to end. Each part is
    percent-encoded, including `-`, `,` and `&`, which the directive syntax reserves.
    `text_fragment_url("https://x.org/p", "a, b-c")` -> `https://x.org/p#:~:text=a%2C%20b%2Dc`.
    Markup in the quote (Markdown `**`, backquotes) is not in the rendered page, so a quote that
    carries it will not match; pass words as the reader sees them.
    """
    tokens = quote.split()
    if not tokens:
        raise ValueError(f"quote must contain at least one word; got {quote!r}")
    if words < 1:
        raise ValueError(f"words must be >= 1; got {words!r}")

    def encode(part: list[str]) -> str:
        return _percent_encode(" ".join(part), safe="").replace("-", "%2D")

    if len(tokens) <= 2 * words:
        directive = "text=" + encode(tokens)
    else:
        directive = f"text={encode(tokens[:words])},{encode(tokens[-words:])}"
    separator = ":~:" if "#" in base_url else "#:~:"
    return f"{base_url}{separator}{directive}"


_MARKER = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")
_MARKERS_AFTER_STOP = re.compile(r"([.!?])((?:\s*\[\d+(?:\s*[,;]\s*\d+)*\])+)")
_REFUSAL_LIKE = re.compile(
    r"\b(?:sources?|context|documents?)\b.*\b(?:do|does)(?:\s+not|n['’]t)\s+"
    r"(?:contain|include|mention|say|answer|cover)", re.IGNORECASE)
_ESCAPED = re.compile(r"\[\^(\d+(?:\s*[,;]\s*\d+)*)\]")


def escape_markers(text: str) -> str:
    """A source's own `[n]` markers as footnotes `[^n]`, which the checker never reads as citations.

    >>> escape_markers("the place to go [1]. See [2, 3].")
    'the place to go [^1]. See [^2, 3].'
    """
    return _MARKER.sub(r"[^\1]", text)


def unescape_markers(text: str) -> str:
    """Undo `escape_markers`: `[^n]` back to `[n]` (exact for text that held no `[^n]` before).

    >>> unescape_markers("the place to go [^1].")
    'the place to go [1].'
    """
    return _ESCAPED.sub(r"[\1]", text)


#: Identifiers a model must never write itself: the server attaches every link.
_IDENTIFIERS = tuple(re.compile(p, re.IGNORECASE) for p in (
    r"\b(?:https?|ftp)://[^\s<>()\[\]]+",                      # URLs
    r"\bwww\.[^\s<>()\[\]]+",                                 # bare web addresses
    r"\[[^\]]*\]\([^)\s]+\)",                                  # Markdown links
    r"\b(?:doi:\s*)?10\.\d{4,9}/[^\s<>()\[\]]+",                # DOIs
    r"\barxiv:\s*(?:\d{4}\.\d{4,5}|[a-z.-]+/\d{7})(?:v\d+)?",    # arXiv ids
    r"(?<![\d.])\d{4}\.\d{4,5}(?:v\d+)?(?![\d.])",                # bare new-style arXiv ids
    r"\bISBN(?:-1[03])?:?\s*[\dX][\d -]{8,15}[\dX]\b",           # ISBNs
    r"#(?::~:text|char|page|t|row|col|cell)=[^\s)\]]*",           # fragments and locators
))


@dataclass(frozen=True)
class AnswerCheck:
    """What is wrong with an answer: `ok` when the three form checks pass; `unsupported` apart."""

    unknown_refs: tuple[int, ...]
    uncited_sentences: tuple[str, ...]
    invented_links: tuple[str, ...]
    unsupported: tuple[str, ...] = ()  # cited sentences below SUPPORT_THRESHOLD (a lexical heuristic)

    @property
    def ok(self) -> bool:
        return not (self.unknown_refs or self.uncited_sentences or self.invented_links)


def refs(text: str) -> list[int]:
    """Every source number in `[n]`, `[n, m]` or `[n][m]` markers: 'a [1, 3] b [2]' -> [1, 3, 2]."""
    return [int(n) for group in _MARKER.findall(text) for n in re.split(r"\s*[,;]\s*", group)]


def sentences(answer: str) -> list[str]:
    """Split an answer into sentences (lines and bullets too), keeping `[n]` markers that follow the full stop:
    'A is B. [1] C is D [2].' -> ['A is B [1].', 'C is D [2].']."""
    out = []
    for line in answer.splitlines():
        line = re.sub(r"^\s*(?:[-*+]|\d+[.)])\s+", "", line)
        line = _MARKERS_AFTER_STOP.sub(r"\2\1", line)
        out.extend(s.strip() for s in re.split(r"(?<=[.!?])\s+", line) if s.strip())
    return out


def is_refusal(sentence: str) -> bool:
    """The REFUSAL sentence, or one saying the sources/context do not contain/mention it."""
    plain = collapse(_MARKER.sub("", sentence)).rstrip(".!").lower()
    return plain == REFUSAL.rstrip(".").lower() or _REFUSAL_LIKE.search(plain) is not None


def is_claim(sentence: str) -> bool:
    """A sentence of at least MIN_CLAIM_WORDS words (markers not counted) that is not a refusal."""
    words = WORD.findall(_MARKER.sub(" ", sentence))
    return len(words) >= MIN_CLAIM_WORDS and not is_refusal(sentence)


def invented_identifiers(answer: str) -> list[str]:
    """URLs, DOIs, arXiv ids, ISBNs, Markdown links and fragments written in `answer`, in order."""
    spans = sorted({m.span() for p in _IDENTIFIERS for m in p.finditer(answer)},
                   key=lambda s: (s[0], -s[1]))
    kept: list[tuple[int, int]] = []
    for start, end in spans:
        if not kept or end > kept[-1][1]:  # drop matches nested inside an earlier, longer one
            kept.append((start, end))
    return [answer[a:b].rstrip(".,;:") for a, b in kept]


def content_words(text: str) -> set[str]:
    """The claim-side content words (`ragcourse.words.claim_words`) of `text` without its `[n]` markers.

    >>> sorted(content_words("Lists need two blank lines [1]."))
    ['blank', 'line', 'list', 'need', 'two']
    """
    return claim_words(_MARKER.sub(" ", text))


def support(sentence: str, quotes: Sequence[str]) -> float:
    """Share of the sentence's content words that occur in the quotes (1.0 if it has none).

    >>> support("Lists need two blank lines [1].", ["Lists must appear after a blank line."])
    0.6
    """
    words = content_words(sentence)
    found = set().union(*(content_words(q) for q in quotes)) if quotes else set()
    return len(words & found) / len(words) if words else 1.0


def cited_sentences(answer: str, citations: Sequence[Citation]) -> tuple[str, ...]:
    """The answer's sentences with at least one `[n]` that names one of `citations`."""
    known = {c.n for c in citations}
    return tuple(s for s in sentences(answer) if known.intersection(refs(s)))


def sentence_support(answer: str, citations: Sequence[Citation]) -> list[tuple[str, float]]:
    """(sentence, `support` by the real sources it cites) for each cited sentence of the answer."""
    quotes = {c.n: c.quote for c in citations}
    return [(s, support(s, [quotes[n] for n in dict.fromkeys(refs(s)) if n in quotes]))
            for s in cited_sentences(answer, citations)]


def unsupported_sentences(answer: str, citations: Sequence[Citation],
                          threshold: float = SUPPORT_THRESHOLD) -> tuple[str, ...]:
    """Cited sentences whose `support` by the real sources they cite is below `threshold`."""
    if not 0 <= threshold <= 1:
        raise ValueError(f"threshold must be in [0, 1]; got {threshold!r}")
    return tuple(s for s, score in sentence_support(answer, citations) if score < threshold)


def check_answer(answer: str, citations: Sequence[Citation],
                 threshold: float = SUPPORT_THRESHOLD) -> AnswerCheck:
    """Check that every [n] names a real source, every claim cites one, and no link was invented;
    also list the cited sentences their sources do not support (`unsupported_sentences`)."""
    known = {c.n for c in citations}
    unknown = tuple(sorted({n for n in refs(answer) if n not in known}))
    uncited = tuple(s for s in sentences(answer) if is_claim(s) and not _MARKER.search(s))
    return AnswerCheck(unknown_refs=unknown, uncited_sentences=uncited,
                       invented_links=tuple(invented_identifiers(answer)),
                       unsupported=unsupported_sentences(answer, citations, threshold))


@dataclass(frozen=True)
class GroundedAnswer:
    """A generated answer, the citations its numbers refer to, and the checker's verdict."""

    question: str
    text: str
    citations: tuple[Citation, ...]
    check: AnswerCheck


def answer(question: str, hits: Sequence[Hit], generate: Callable[[str], str], cut: float,
           k: int = 4) -> GroundedAnswer | NoAnswer:
    """Gate, then build the context, then generate: `generate` is never called after NoAnswer.

    `generate` takes the prompt and returns the model's text (any local model, or a stub).
    """
    gated = gate(hits, cut, k, query=question)
    if isinstance(gated, NoAnswer):
        return gated
    context = build_context(question, gated.hits)
    text = generate(context.prompt)
    return GroundedAnswer(question=question, text=text, citations=context.citations,
                          check=check_answer(text, context.citations))
