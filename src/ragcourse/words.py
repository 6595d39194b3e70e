"""Content words: the two rules by which the book asks whether two texts share words (chapters 6 and 7).

- `query_words` (chapter 6's `coverage` signal, which compares a query with chunks): BM25's own tokens
  (`ragcourse.bm25.tokenize`) of three characters or more, without the 40 function words of
  `QUERY_STOPWORDS`; "table" and "tables" stay different words, as they are for BM25.
- `claim_words` (chapter 7's `support` score, which compares a written sentence with its sources): words
  as a reader sees them (`WORD`: letters and digits, joined by an apostrophe or a hyphen, so "don't"
  and "read-only" stay whole), lower-cased, without the longer list `CLAIM_STOPWORDS` (negations
  included), a final plural s dropped ("lists" is "list").

Two rules, named apart, because each chapter's published numbers were measured with its own: merging
them would change both chapters' figures. Leaves out: stemming beyond the plural s, and other languages.
"""

from __future__ import annotations

import re


def collapse(text: str) -> str:
    """A text's words as written, each whitespace run one space (how every needle is matched, chapter 1).

    >>> collapse("a\\n  b ")
    'a b'
    """
    return " ".join(text.split())

#: Function words `query_words` leaves out (BM25's tokens of three letters or more are kept otherwise).
QUERY_STOPWORDS = frozenset(
    "a an and are as at be between but by can do does for from get how in into is it its my of on or "
    "should so than that the them this to up use what when which why with".split())

#: Function words `claim_words` leaves out: not content, so a support score ignores them (negations too).
CLAIM_STOPWORDS = frozenset("""
a about after all also an and any are as at be because been before being both but by can could
did do does doing done each either for from had has have having he her here his how i if in into
is it its itself may me might more most must my no nor not of on one only or other our out over
own same shall she should so some such than that the their them then there these they this those
through to too under until up very was we were what when where which while who whom whose why
will with would yet you your
""".split())

#: A word as a reader sees it: letters and digits, joined by an apostrophe or a hyphen ("don't", "read-only").
WORD = re.compile(r"[^\W_]+(?:['’-][^\W_]+)*")


def query_words(text: str) -> set[str]:
    """BM25's tokens of three or more characters, without function words.

    >>> sorted(query_words("How do I add a caption to the figure?"))
    ['add', 'caption', 'figure']
    """
    from .bm25 import tokenize  # here: `collapse` alone must import without numpy and scipy (the grader's child)

    return {w for w in tokenize(text) if len(w) >= 3 and w not in QUERY_STOPWORDS}


def claim_words(text: str) -> set[str]:
    """Lower-cased `WORD`s of `text` without CLAIM_STOPWORDS, a final plural s dropped (not from -ss, -us).

    >>> sorted(claim_words("Lists don't need the read-only tables' status"))
    ["don't", 'list', 'need', 'read-only', 'status', 'table']
    """
    words = (w.lower() for w in WORD.findall(text))
    return {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us")) else w
            for w in words if w not in CLAIM_STOPWORDS}
