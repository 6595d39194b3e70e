"""Test oracle: a plain-Python transcription of the seed's TypeScript `chunkDocument` rule.

Written independently of `ragcourse.chunking`, on purpose close to the reference's control flow
(sections from `^## (.+)$`, heading line skipped, paragraphs, greedy packing, sentence fallback,
trim on emit). It keeps the reference's behaviour, including what `ragcourse.chunking` changes:
text before the first `## ` heading is DROPPED, a CRLF section is one paragraph, and a final
heading line without a newline is emitted as content.

JavaScript regex semantics are reproduced where they differ from Python's: `.` and the
multiline `^`/`$` know four line terminators, and `\\s`/`trim()` use JavaScript's whitespace set.
Offsets are Python code-point indices (JavaScript counts UTF-16 code units, which differs only
for characters outside the Basic Multilingual Plane).
"""

from __future__ import annotations

import re
from typing import NamedTuple

_LINE_TERMINATORS = "\n\r\u2028\u2029"
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_DOT = f"[^{_LINE_TERMINATORS}]"
_WS = "[" + re.escape(_JS_WHITESPACE) + "]"

# /^## (.+)$/gm
HEADS = re.compile(rf"(?:^|(?<=[{_LINE_TERMINATORS}]))## ({_DOT}+)(?=[{_LINE_TERMINATORS}]|\Z)")
# /^## .+\n/ (no m flag: only at the start of the slice)
SKIP = re.compile(rf"## {_DOT}+\n")
# /[^\n]([^\n]|\n(?!\n))*/g
PARAGRAPHS = re.compile(r"[^\n](?:[^\n]|\n(?!\n))*")
# /[^.!?]*[.!?]*\s*/g
SENTENCES = re.compile(rf"[^.!?]*[.!?]*{_WS}*")


class SeedChunk(NamedTuple):
    """What the reference returns for one chunk (`from`/`to` renamed `start`/`end`)."""

    text: str
    content: str
    section: str
    start: int
    end: int


def js_trim(s: str) -> str:
    """JavaScript's String.prototype.trim."""
    return s.strip(_JS_WHITESPACE)


def js_trim_start(s: str) -> str:
    """JavaScript's String.prototype.trimStart."""
    return s.lstrip(_JS_WHITESPACE)


def first_heading(doc: str) -> int | None:
    """Offset of the first `## ` heading as the reference finds it, or None."""
    m = HEADS.search(doc)
    return m.start() if m else None


def _section_spans(doc: str) -> list[tuple[int, str, int]]:
    heads = [(m.start(), js_trim(m.group(1))) for m in HEADS.finditer(doc)]
    if not heads:
        return [(0, "", len(doc))]
    return [
        (at, title, heads[i + 1][0] if i + 1 < len(heads) else len(doc))
        for i, (at, title) in enumerate(heads)
    ]


def _chunk_section(doc: str, at: int, title: str, end: int, doc_title: str, target: int):
    out: list[SeedChunk] = []
    header = f"{doc_title} > {title}" if title else doc_title
    skip_match = SKIP.match(doc[at:end])
    skip = len(skip_match.group(0)) if skip_match else 0
    body = doc[at + skip : end]
    origin = at + skip

    def emit(frm: int, to: int) -> None:
        raw = body[frm:to]
        lead = len(raw) - len(js_trim_start(raw))
        content = js_trim(raw)
        if not content:
            return
        start = origin + frm + lead
        out.append(SeedChunk(f"[{header}]\n{content}", content, title, start, start + len(content)))

    open_: list[int] | None = None
    for m in PARAGRAPHS.finditer(body):
        pf, pt = m.start(), m.end()
        if pt - pf > target:
            if open_:
                emit(*open_)
                open_ = None
            cur: list[int] | None = None
            for sm in SENTENCES.finditer(body[pf:pt]):
                if not sm.group(0):
                    continue
                sf, st = pf + sm.start(), pf + sm.end()
                if cur and st - cur[0] > target:
                    emit(*cur)
                    cur = None
                cur = [cur[0], st] if cur else [sf, st]
            if cur:
                emit(*cur)
            continue
        if open_ and pt - open_[0] > target:
            emit(*open_)
            open_ = None
        open_ = [open_[0], pt] if open_ else [pf, pt]
    if open_:
        emit(*open_)
    return out


def seed_chunk_document(doc: str, doc_title: str, target: int = 512) -> list[SeedChunk]:
    """The reference `chunkDocument(doc, docTitle, target)`."""
    out: list[SeedChunk] = []
    for at, title, end in _section_spans(doc):
        out += _chunk_section(doc, at, title, end, doc_title, target)
    return out
