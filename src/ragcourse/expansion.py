"""Fix the query before it reaches the index (chapter 10): ticket clean-up, feedback terms, reformulations.

Three expansions, each a pure function of the query (and, for feedback, of a first BM25 pass):

- `clean_ticket` strips greetings and sign-offs and pulls out exact identifiers (option names,
  directive names, file names, quoted messages, code names such as ``AUTH_4027``); `exact_ranking`
  ranks the chunks that contain them verbatim, a third list for RRF: the exact-match boost.
- `relevance_model` and `interpolate` are RM3 pseudo-relevance feedback: the terms most probable in
  the top k texts of a first BM25 pass (each text weighted by its score, stopwords left out), mixed
  with the original query by a fixed weight; `feedback_terms` lists the terms it adds.
- `parse_reformulations` reads the 3-5 rewrites a generator wrote (chapter 10 stores SmolLM2's and the
  1.5B model's greedy output; `recorded_rewrites` re-parses a record after checking its queries are the live
  ones, `count_rewrites` says how many each query got).

`Expanded` wraps a `pipeline.Retriever` with any of them and keeps its interface (`rank`,
`rankings`), so expansion composes with hybrid retrieval and with reranking.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from .bm25 import idf, tokenize
from .fusion import rrf
from .paths import RESULTS_DIR
from .pipeline import METHODS, Retriever, rank_all
from .precision import stable_order
from .words import CLAIM_STOPWORDS

EXPANSIONS = ("none", "clean", "feedback", "clean+feedback", "multi")
#: What chapter 10 asks SmolLM2 (greedy, at most REWRITE_TOKENS new tokens) for the "multi" expansion.
REWRITE_PROMPT = ("Rewrite this search query in four different ways, using other words, so that a search engine "
                  "over software documentation finds the answer. Write one rewrite per line, nothing else."
                  "\n\nQuery: {query}")
REWRITE_TOKENS = 48
#: SmolLM2's stored rewrites, written by `python benchmarks/expansions.py`.
REWRITES_FILE = RESULTS_DIR / "expansions.json"
#: The 1.5B model's, under the same prompt and budget: `make rewrites-qwen` (`--model qwen`).
QWEN_REWRITES_FILE = RESULTS_DIR / "expansions_qwen.json"

_GREETING = re.compile(r"^\s*(?:hi|hello|hey|dear|good (?:morning|afternoon|evening))\b[^.!?\n]{0,40}?[,.!:\n]\s*",
                       re.IGNORECASE)
_SIGN_OFF = re.compile(
    r"\s*(?:thanks?(?: you| a lot| so much)?(?: in advance)?|cheers|regards|best|"
    r"any (?:help|ideas?|pointers?|hints?)(?: (?:would be|is))?(?: (?:much|greatly|really))? appreciated|"
    r"please help(?: me)?|help!?)\s*[.!]*\s*$",
    re.IGNORECASE,
)
_IDENTIFIERS = (
    re.compile(r"`([^`\n]{2,60})`"),                                   # `quoted code`
    re.compile(r"\"([^\"\n]{4,80})\""),                                # "an error message"
    re.compile(r"(?<![\w-])(--?[a-z][a-z0-9]*(?:-[a-z0-9]+)+)"),         # --option-names
    re.compile(r"(?<![\w.])([a-z][a-z0-9-]*::)"),                       # directive::
    re.compile(r"(?<![\w/.-])([\w-]+\.(?:py|txt|rst|conf|cfg|css|html|tex|xml|odt|json|ini|toml))\b"),
    re.compile(r"\b([A-Z][A-Z0-9]*_[A-Z0-9_]+)\b"),                     # CONSTANT_CASE, AUTH_4027
    re.compile(r"\b([a-z][a-z0-9]*_[a-z0-9_]+)\b"),                     # snake_case
    re.compile(r"\b([a-z]+[A-Z][A-Za-z0-9]*|[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*)\b"),  # camelCase, CamelCase
)


@dataclass(frozen=True)
class Cleaned:
    """A ticket without its greeting and sign-off, and the exact identifiers found in it."""

    query: str
    identifiers: tuple[str, ...]


def strip_boilerplate(ticket: str) -> str:
    """The ticket without a leading greeting or trailing thanks/sign-offs.

    >>> strip_boilerplate("Hi all, the --stylesheet option is ignored. Thanks in advance!")
    'the --stylesheet option is ignored.'
    """
    text = _GREETING.sub("", ticket, count=1)
    previous = None
    while previous != text:
        previous, text = text, _SIGN_OFF.sub("", text)
    return text.strip() or ticket.strip()


def identifiers(text: str) -> tuple[str, ...]:
    """Exact strings worth matching verbatim, in order of appearance, without repeats.

    >>> identifiers('rst2html says "Unknown directive type" for my_table in docs.conf, AUTH_4027')
    ('Unknown directive type', 'docs.conf', 'AUTH_4027', 'my_table')
    """
    found: list[str] = []
    for pattern in _IDENTIFIERS:
        for match in pattern.finditer(text):
            value = match.group(1).strip()
            if value and value not in found and not any(value in f for f in found):
                found.append(value)
    return tuple(found)


def clean_ticket(ticket: str) -> Cleaned:
    """Strip the boilerplate, then pull out the identifiers.

    >>> clean_ticket("Hello, how do I set --tab-width? Thanks!")
    Cleaned(query='how do I set --tab-width?', identifiers=('--tab-width',))
    """
    query = strip_boilerplate(ticket)
    return Cleaned(query, identifiers(query))


def exact_ranking(texts: Sequence[str], wanted: Iterable[str]) -> list[int]:
    """Positions of the texts that contain any wanted string verbatim (case-insensitive), most matched first.

    Texts with no match are left out: this list only adds votes in RRF, it never removes any.

    >>> exact_ranking(["use --tab-width", "no", "--tab-width and tab_size"], ["--tab-width", "tab_size"])
    [2, 0]
    """
    patterns = [_verbatim(w) for w in wanted]
    counts = [(sum(bool(p.search(t)) for p in patterns), i) for i, t in enumerate(texts)]
    return [i for n, i in sorted(counts, key=lambda c: (-c[0], c[1])) if n > 0]


def _verbatim(identifier: str) -> re.Pattern:
    """The identifier as a whole word where it starts or ends with a word character: "tab" misses "tables"."""
    left = r"(?<!\w)" if re.match(r"\w", identifier) else ""
    right = r"(?!\w)" if re.search(r"\w$", identifier) else ""
    return re.compile(left + re.escape(identifier) + right, re.IGNORECASE)


def selective(wanted: Iterable[str], texts: Sequence[str], max_share: float = 0.02) -> list[str]:
    """The wanted strings found verbatim in at least one text and at most `max_share` of them.

    An identifier is worth an exact match only when it is rare, as a term with a high idf is: "LaTeX"
    or "note" occurs everywhere in a LaTeX writer's manual and would boost nothing in particular.

    >>> selective(["--tab-width", "tab", "missing"], ["--tab-width", "tab", "tab", "tab"], max_share=0.5)
    ['--tab-width']
    """
    kept = []
    for w in wanted:
        pattern = _verbatim(w)
        n = sum(bool(pattern.search(t)) for t in texts)
        if 0 < n <= max_share * len(texts):
            kept.append(w)
    return kept


@dataclass(frozen=True)
class Feedback:
    """RM3 settings: texts fed back, terms kept, the idf a term needs, the words never fed back, and the
    weight of the original query in the interpolation (0.5, the common default, fixed before measuring)."""

    texts: int = 10
    terms: int = 10
    min_idf: float = 1.0
    stopwords: frozenset[str] = CLAIM_STOPWORDS
    original_weight: float = 0.5

    def __post_init__(self) -> None:
        if not 0 <= self.original_weight <= 1:
            raise ValueError(f"original_weight={self.original_weight!r}: expected a weight in [0, 1]")


def relevance_model(texts: Sequence[str], scores: Sequence[float], settings: Feedback = Feedback(),
                    doc_freq: Mapping[str, int] | None = None) -> dict[str, float]:
    """P(w|R) = sum_d P(w|d) s(d) / sum_d s(d) over the top texts, cut to the `terms` largest and renormalised.

    Stopwords and terms in too many texts (idf below `min_idf`) never enter the model.

    >>> relevance_model(["tab width tab", "tab stops", "colour"], [2.0, 1.0, 0.0],
    ...                 Feedback(texts=2, terms=2, min_idf=0.0))
    {'tab': 0.733333, 'width': 0.266667}
    """
    order = sorted(range(len(texts)), key=lambda i: (-scores[i], i))[: settings.texts]
    top = [i for i in order if scores[i] > 0]
    total = float(sum(scores[i] for i in top)) or 1.0
    doc_freq = doc_freq if doc_freq is not None else Counter(t for text in texts for t in set(tokenize(text)))
    weight: Counter[str] = Counter()
    for i in top:
        tokens = Counter(tokenize(texts[i]))
        length = sum(tokens.values())
        for term, count in tokens.items():
            if term not in settings.stopwords and _idf(len(texts), doc_freq[term]) >= settings.min_idf:
                weight[term] += count / length * float(scores[i]) / total
    kept = sorted(weight.items(), key=lambda kv: (-kv[1], kv[0]))[: settings.terms]
    mass = sum(w for _, w in kept) or 1.0
    return {term: round(w / mass, 6) for term, w in kept}


def interpolate(query: str, model: Mapping[str, float], original_weight: float) -> dict[str, float]:
    """RM3's expanded query: original_weight * P(w|Q) + (1 - original_weight) * P(w|R), P(w|Q) = tf / |Q|.

    >>> interpolate("tab tab size", {"tab": 0.5, "width": 0.5}, 0.5)
    {'tab': 0.583333, 'size': 0.166667, 'width': 0.25}
    """
    asked = Counter(tokenize(query))
    length = sum(asked.values()) or 1
    weights = {t: original_weight * n / length for t, n in asked.items()}
    for term, p in model.items():
        weights[term] = weights.get(term, 0.0) + (1 - original_weight) * p
    return {t: round(w, 6) for t, w in weights.items()}


def feedback_terms(texts: Sequence[str], scores: Sequence[float], query: str,
                   settings: Feedback = Feedback(), doc_freq: Mapping[str, int] | None = None) -> list[str]:
    """The terms of the relevance model (`relevance_model`) that are new to the query, most probable first.

    >>> feedback_terms(["tab width tab", "tab stops", "colour"], [2.0, 1.0, 0.0], "tab",
    ...                Feedback(texts=2, terms=3, min_idf=0.0))
    ['width', 'stops']
    """
    asked = set(tokenize(query))
    return [t for t in relevance_model(texts, scores, settings, doc_freq) if t not in asked]


def _idf(n_texts: int, df: int) -> float:
    """BM25's idf (`ragcourse.bm25.idf`) of one term in `df` of `n_texts` texts."""
    return float(idf(n_texts, df))


def parse_reformulations(output: str, query: str, most: int = 5, cut: bool = False) -> list[str]:
    """The generator's rewrites, one per line: numbering and quotes stripped, repeats and the query dropped.

    `cut` says the reply stopped at its token budget: its last line, unless a newline ended it, is unfinished
    and is not a rewrite.

    >>> parse_reformulations('1. "transaction error"\\n2. billing declined\\n- billing declined\\n', "payment failed")
    ['transaction error', 'billing declined']
    >>> parse_reformulations("card declined\\nbilling error\\nwhy was my", "payment failed", cut=True)
    ['card declined', 'billing error']
    """
    lines = output.splitlines()
    if cut and lines and not output.endswith("\n"):
        lines = lines[:-1]
    seen = {query.strip().lower()}
    found = []
    for line in lines:
        text = re.sub(r"^\s*(?:[-*•]|\d+[.):])\s*", "", line).strip().strip("\"'“”").strip()
        if len(text) >= 3 and text.lower() not in seen:
            seen.add(text.lower())
            found.append(text)
    return found[:most]


def stored_rewrites(path: Path = REWRITES_FILE) -> dict:
    """The stored generator record; refused, with what to re-run, if its prompt or token budget is not the package's."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run `python benchmarks/expansions.py` to generate the rewrites")
    record = json.loads(path.read_text(encoding="utf-8"))
    if record.get("prompt") != REWRITE_PROMPT or record.get("max_new_tokens") != REWRITE_TOKENS:
        raise ValueError(f"{path} was generated with another prompt or token budget than REWRITE_PROMPT and "
                         f"REWRITE_TOKENS={REWRITE_TOKENS}: re-run `python benchmarks/expansions.py`")
    return record


def recorded_rewrites(record: Mapping, queries: Iterable) -> dict[str, list[str]]:
    """Query text -> the rewrites `parse_reformulations` reads in the stored output, for each recorded query
    (the last line left out of a reply that stopped at the record's token budget).

    Refused, naming the query, if a recorded id is not among `queries` or its text is not the live text.

    >>> from ragcourse.groundtruth import Query
    >>> live = [Query("q1/doc", "q1", "doc", "tab width", "", ""), Query("q2/doc", "q2", "doc", "colour", "", "")]
    >>> row = {"query": "tab width", "output": "1. tab size\\n2. tab stops\\n3. tab", "new_tokens": 12}
    >>> recorded_rewrites({"max_new_tokens": 12, "queries": {"q1/doc": row}}, live)
    {'tab width': ['tab size', 'tab stops']}
    """
    live = {q.id: q.text for q in queries}
    found = {}
    for qid, row in record["queries"].items():
        if qid not in live:
            raise ValueError(f"the stored rewrites hold {qid!r}, which the ground truth no longer has: re-record them")
        if row["query"] != live[qid]:
            raise ValueError(f"{qid}: the stored query text is not the ground truth's: re-record the rewrites")
        cut = row["new_tokens"] >= record["max_new_tokens"]  # stopped by the budget: its last line is unfinished
        found[row["query"]] = parse_reformulations(row["output"], row["query"], cut=cut)
    return found


class RewriteCount(NamedTuple):
    """Rewrites per query: how many queries, the mean, the queries with `low` to `high` of them, and with none."""

    queries: int
    mean: float
    in_range: int
    zero: int


def count_rewrites(rewrites: Mapping[str, Sequence[str]], low: int = 3, high: int = 5) -> RewriteCount:
    """How many rewrites each query got, summed up (3 to 5 is the field report's range).

    >>> count_rewrites({"a": ["x", "y", "z"], "b": [], "c": ["x", "y", "z", "w"]})
    RewriteCount(queries=3, mean=2.333333, in_range=2, zero=1)
    """
    counts = [len(r) for r in rewrites.values()]
    if not counts:
        raise ValueError("no queries: nothing to count")
    return RewriteCount(len(counts), round(sum(counts) / len(counts), 6), sum(low <= n <= high for n in counts),
                        sum(n == 0 for n in counts))


@dataclass
class Expanded:
    """A retriever whose queries are expanded first; `rank` and `rankings` work as `Retriever`'s do.

    `expansion` is one of EXPANSIONS ("clean+feedback" feeds back from the cleaned query and adds the
    identifier list); "multi" reads the rewrites from `reformulations` (query text -> list of rewrites).
    """

    retriever: Retriever
    expansion: str = "clean"
    feedback: Feedback = Feedback()
    max_share: float = 0.02
    reformulations: Mapping[str, Sequence[str]] = field(default_factory=dict)
    _doc_freq: Counter = field(default_factory=Counter, repr=False)

    def __post_init__(self) -> None:
        if self.expansion not in EXPANSIONS:
            raise ValueError(f"expansion {self.expansion!r} is not one of {list(EXPANSIONS)}")
        self._texts = [c.text for c in self.retriever.chunks]
        self._doc_freq = Counter(t for text in self._texts for t in set(tokenize(text)))

    def lists(self, query: str, method: str = "hybrid") -> list[list[int]]:
        """The rankings RRF fuses for this query: the plain method's lists plus the expansion's."""
        if method not in METHODS:
            raise ValueError(f"method {method!r} is not one of {list(METHODS)}")
        r = self.retriever
        if self.expansion in ("clean", "clean+feedback"):
            cleaned = clean_ticket(query)
            base = (self._feedback_lists(cleaned.query, method) if self.expansion == "clean+feedback"
                    else _method_lists(r, cleaned.query, method))
            exact = exact_ranking(self._texts, selective(cleaned.identifiers, self._texts, self.max_share))
            return base + ([exact] if exact else [])
        if self.expansion == "feedback":
            return self._feedback_lists(query, method)
        if self.expansion == "multi":
            rewrites = self.reformulations.get(query)
            if rewrites is None:
                raise KeyError(f"no stored reformulations for the query {query!r}")
            return [lst for q in [query, *rewrites] for lst in _method_lists(r, q, method)]
        return _method_lists(r, query, method)

    def _feedback_lists(self, query: str, method: str) -> list[list[int]]:
        r, settings = self.retriever, self.feedback
        model = relevance_model(self._texts, r.bm25.scores(query), settings, self._doc_freq)
        weights = interpolate(query, model, settings.original_weight)
        scores = sum(w * r.bm25.scores(term) for term, w in weights.items())
        expanded = stable_order(scores, descending=True).tolist()  # BM25 of the weighted, expanded query
        if method == "bm25":
            return [expanded]
        dense = r.rank(query, "dense")
        return [dense] if method == "dense" else [dense, expanded]

    def rank(self, query: str, method: str = "hybrid") -> list[int]:
        """Chunk positions best first: RRF (c = 60) over `lists`; a single list is returned as it is."""
        lists = self.lists(query, method)
        return list(lists[0]) if len(lists) == 1 else [int(i) for i in rrf(lists)]

    def rankings(self, queries: Iterable, method: str = "hybrid", depth: int | None = None) -> dict[str, list]:
        """query id -> chunks best first, for `evaluation.evaluate` (as `Retriever.rankings`)."""
        return rank_all(self.rank, self.retriever.chunks, queries, method, depth)


def _method_lists(retriever: Retriever, query: str, method: str) -> list[list[int]]:
    """The lists that `Retriever.rank` fuses for one method: one for dense or BM25, two for hybrid."""
    if method != "hybrid":
        return [retriever.rank(query, method)]
    return [retriever.rank(query, "dense"), retriever.rank(query, "bm25")]
