"""Citation recall and precision as ALCE measures them, with a model as the judge of support (chapter 7).

A *statement* is a claim sentence of an answer (`citations.is_claim`). Citation recall counts the statements
that the passages they cite, joined, support; a statement that cites nothing, or a source that does not
exist, is unsupported. Citation precision counts the citations that are needed: in a supported statement
with one citation that citation; with several, each one that supports the statement alone, or without
which the others no longer do (Gao et al. 2023, ALCE). Which passages support which sentence is asked of
a judge, any function from a judge prompt to True (SUPPORTED) or False (NOT); a recording stores its
verdicts by prompt hash, and `stored_judge` replays them.

Leaves out: the judge's own quality (chapter 7's lab measures it against hand labels) and answer
correctness (a sentence can be supported and still not answer the question).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from .citations import _MARKER, Citation, Context, build_context, escape_markers, is_claim, refs, sentences
from .gate import Answered, gate
from .words import collapse

Judge = Callable[[str], bool]


def judge_prompt(passages: Sequence[str], sentence: str) -> str:
    """What the judge reads: the passages (joined, markers escaped) and the sentence without its `[n]`.

    >>> print(judge_prompt(["Lists need a blank line [1]."], "A list needs a blank line [1]."))
    ... # doctest: +ELLIPSIS
    Does the passage support the sentence? ...
    PASSAGE
    Lists need a blank line [^1].
    <BLANKLINE>
    SENTENCE
    A list needs a blank line.
    """
    passage = "\n\n".join(escape_markers(p) for p in passages)
    claim = collapse(_MARKER.sub("", sentence)).replace(" .", ".")
    return ("Does the passage support the sentence? Answer SUPPORTED if the passage states everything the "
            "sentence says, NOT otherwise. Answer with one word.\n\n"
            f"PASSAGE\n{passage}\n\nSENTENCE\n{claim}")


def verdict(reply: str) -> bool:
    """The judge's one-word reply read as SUPPORTED (True) or anything else (False).

    >>> verdict(" SUPPORTED."), verdict("NOT"), verdict("Not supported")
    (True, False, False)
    """
    return reply.strip().upper().startswith("SUPPORTED")


def prompt_sha256(prompt: str) -> str:
    """The hex sha256 of a prompt's UTF-8 bytes, the key of a stored verdict."""
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


def stored_judge(verdicts: Mapping[str, bool]) -> Judge:
    """A judge that replays stored verdicts by prompt hash; KeyError naming the prompt when one is missing.

    >>> stored_judge({prompt_sha256("p"): True})("p")
    True
    """
    def judge(prompt: str) -> bool:
        key = prompt_sha256(prompt)
        if key not in verdicts:
            raise KeyError(f"no stored verdict for judge prompt {key[:12]}...: rerun the recording")
        return verdicts[key]
    return judge


class Attribution(NamedTuple):
    """One answer's counts: statements, those supported by their citations; citations, those needed."""

    statements: int
    supported: int
    citations: int
    needed: int


def _statement(sentence: str, quotes: Mapping[int, str], judge: Judge) -> tuple[bool, int, int]:
    """(supported, citations, needed citations) of one statement, asking the judge as ALCE does."""
    cited = list(dict.fromkeys(refs(sentence)))
    if not cited or any(n not in quotes for n in cited):
        return False, len(cited), 0
    supported = judge(judge_prompt([quotes[n] for n in cited], sentence))
    if not supported or len(cited) == 1:
        return supported, len(cited), int(supported)
    needed = sum(judge(judge_prompt([quotes[n]], sentence))
                 or not judge(judge_prompt([quotes[m] for m in cited if m != n], sentence)) for n in cited)
    return True, len(cited), needed


def attribution(answer: str, sources: Sequence[Citation], judge: Judge) -> Attribution:
    """ALCE's counts for one answer over its claim sentences; `judge` decides support.

    >>> src = [Citation(1, "d", "D", "s", "#char=0,9", "Lists need a blank line.", 0.1)]
    >>> attribution("Lists need a blank line [1]. Tables need none at all.", src, lambda p: True)
    Attribution(statements=2, supported=1, citations=1, needed=1)
    """
    quotes = {c.n: c.quote for c in sources}
    counts = [_statement(s, quotes, judge) for s in sentences(answer) if is_claim(s)]
    return Attribution(len(counts), sum(c[0] for c in counts), sum(c[1] for c in counts), sum(c[2] for c in counts))


def recorded_contexts(items: Sequence[tuple], cut: float, k: int) -> dict[tuple[str, str], Context]:
    """(query id, mode) -> prompt and citations, in the order `make answers-qwen` records them; `items` are
    (query id, "in" | "out", text, top-k hits). Modes: "example" (chapter 7's prompt with
    `citations.FORMAT_EXAMPLE`) where the gate answers; "ungated" for every out-of-domain query (no gate, the
    example); "gated" (chapter 7's prompt as it is) where the gate answers."""
    kept = {query_id: gate(hits, cut, k, query=text) for query_id, _, text, hits in items}
    answered = [(query_id, text, kept[query_id].hits) for query_id, _, text, _ in items
                if isinstance(kept[query_id], Answered)]
    out = {(query_id, "example"): build_context(text, hits, example=True) for query_id, text, hits in answered}
    out |= {(query_id, "ungated"): build_context(text, hits[:k], example=True)
            for query_id, group, text, hits in items if group == "out"}
    return out | {(query_id, "gated"): build_context(text, hits) for query_id, text, hits in answered}


def read_labels(path: Path) -> list[dict]:
    """The hand-labelled pairs of a jsonl file (lines starting with # are its description)."""
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip() and not line.startswith("#")]


def labelled_prompt(row: Mapping, texts: Mapping[str, str]) -> str:
    """The judge prompt of one labelled pair: its sentence against the passage its locator names in `texts`."""
    return judge_prompt([texts[row["doc"]][row["start"]:row["end"]]], row["sentence"])
