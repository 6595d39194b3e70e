"""Tests for ragcourse.genre_chunking: hand-worked chunkings of invented samples, errors, and
hypothesis properties (the Chunk contract, coverage, order, budget, repeated text) for every chunker.

The samples are written for these tests in each genre's shape; no third-party text.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ragcourse.chunking import chunk, header, sentence_spans
from ragcourse.corpus import Document, sections
from ragcourse.genre_chunking import (
    GENRE_CHUNKERS,
    BreakCall,
    ParsedBreaks,
    adjacent_similarities,
    break_offsets,
    breaks_prompt,
    chunk_at_breaks,
    clause_chunk,
    clause_marks,
    function_chunk,
    genre_chunker,
    heading_chunk,
    llm_break_calls,
    llm_chunk,
    parse_breaks,
    recursive_spans,
    semantic_breaks,
    semantic_chunk,
    unit_spans,
)
from ragcourse.genres import load_genre
from ragcourse.paths import RESULTS_DIR

# --- a fake embedder: two topics (login, billing) plus a small constant, so no vector is zero ---

LOGIN = {"log", "login", "password", "locked", "sign"}
BILLING = {"invoice", "billing", "charge", "refund", "paid"}


def fake_embed(texts: list[str]) -> np.ndarray:
    """One unit vector per text: (login words, billing words, 0.1), normalised."""
    rows = []
    for t in texts:
        words = re.findall(r"[a-z]+", t.lower())
        row = np.array([sum(w in LOGIN for w in words), sum(w in BILLING for w in words), 0.1])
        rows.append(row / np.linalg.norm(row))
    return np.array(rows).reshape(len(texts), 3)


def contents(chunks) -> list[str]:
    return [c.content for c in chunks]


# --- legal: clauses ---

LEGAL = Document("terms", "Terms", (
    "## 5. Limitation of Liability\n"
    "5.1. Cap. Each party's total liability is limited to the fees paid in the prior twelve months.\n"
    "5.2. Exceptions. The cap in 5.1 does not apply to:\n"
    "(a) breach of confidentiality;\n"
    "(b) the indemnity under Section 6.\n"
    "5.3. No party is liable for indirect damages.\n"
    "\n"
    "## 6. Indemnity\n"
    "Each party shall defend the other against third-party claims.\n"
))
CAP = ("5.2. Exceptions. The cap in 5.1 does not apply to:\n(a) breach of confidentiality;\n"
       "(b) the indemnity under Section 6.")


def test_clause_marks_rank_styles_by_first_appearance():
    text = "Section 1 – A\n1. x\n(a) y\n(i) z\n(ii) w\n(b) v\n2. u\nSection 2 – B\n"
    assert [d for _, d in clause_marks(text)] == [0, 1, 2, 3, 3, 2, 1, 0]
    assert clause_marks("1.1. a\n1.1.2 b\nA. c\n(1) d\n") == [(0, 0), (7, 1), (15, 2), (20, 3)]


def test_legal_cap_with_exceptions_comes_back_whole():
    got = clause_chunk(LEGAL, target=160)
    assert contents(got) == [
        "5.1. Cap. Each party's total liability is limited to the fees paid in the prior twelve months.",
        CAP,
        "5.3. No party is liable for indirect damages.",
        "Each party shall defend the other against third-party claims.",
    ]
    assert [c.section for c in got] == ["5. Limitation of Liability"] * 3 + ["6. Indemnity"]
    assert got[1].text == "[Terms > 5. Limitation of Liability]\n" + CAP
    # chapter 2's E cuts the same section at sentence ends, here inside "5.1", away from the exceptions
    e_chunks = contents(chunk(LEGAL, "E", 160, 0))
    assert not any(CAP in c for c in e_chunks) and e_chunks[0].endswith("The cap in 5.")


def test_legal_over_budget_clause_splits_at_its_sub_clauses_only():
    got = contents(clause_chunk(LEGAL, target=100))
    assert got[:4] == [
        "5.1. Cap. Each party's total liability is limited to the fees paid in the prior twelve months.",
        "5.2. Exceptions. The cap in 5.1 does not apply to:\n(a) breach of confidentiality;",
        "(b) the indemnity under Section 6.\n5.3. No party is liable for indirect damages.",
        "Each party shall defend the other against third-party claims.",
    ]


def test_legal_whole_section_when_it_fits():
    assert contents(clause_chunk(LEGAL, target=512))[0] == LEGAL.text[30:LEGAL.text.index("\n\n## 6")]


# --- API reference: functions ---

API = Document("paths", "Paths", (
    "Functions for paths.\n\n"
    "## shortest(G, s, t)\n"
    "Return a shortest path.\n\n"
    "Parameters\n----------\nG : graph\n    The graph.\ns : node\n    Start.\n\n"
    "Raises\n------\nNoPath\n    If t cannot be reached.\n\n"
    "## has_path(G, s, t)\n"
    "True if t can be reached from s.\n"
))
SHORTEST = ("Return a shortest path.\n\nParameters\n----------\nG : graph\n    The graph.\ns : node\n    Start.\n\n"
            "Raises\n------\nNoPath\n    If t cannot be reached.")


def test_api_one_chunk_per_function():
    got = function_chunk(API, target=512)
    assert [(c.section, c.content) for c in got] == [
        ("", "Functions for paths."),
        ("shortest(G, s, t)", SHORTEST),
        ("has_path(G, s, t)", "True if t can be reached from s."),
    ]
    assert got[1].text == "[Paths > shortest(G, s, t)]\n" + SHORTEST


def test_api_long_function_splits_at_numpydoc_sections_then_entries():
    got = [c for c in function_chunk(API, target=60) if c.section == "shortest(G, s, t)"]
    assert contents(got) == [
        "Return a shortest path.",
        "Parameters\n----------\nG : graph\n    The graph.",
        "s : node\n    Start.",
        "Raises\n------\nNoPath\n    If t cannot be reached.",
    ]
    assert {c.text.split("\n")[0] for c in got} == {"[Paths > shortest(G, s, t)]"}  # signature on every piece


# --- support threads: semantic ---

THREAD = Document("t1", "Thread", (
    "## Ticket 1\n"
    "I cannot log in. The login page rejects my password. "
    "Also my invoice is wrong. The billing charge doubled.\n"
))


def test_adjacent_similarities_and_breaks_by_hand():
    sims = adjacent_similarities(fake_embed(["log in", "password", "invoice", "refund"]))
    assert sims.tolist() == pytest.approx([1.0, round(0.01 / 1.01, 6), 1.0])
    assert semantic_breaks(sims, threshold=0.5) == [2]
    assert semantic_breaks([0.9, 0.8, 0.1, 0.7], percentile=75) == [3]  # distances .1 .2 .9 .3; cutoff .45
    assert semantic_breaks([], percentile=95) == []


@pytest.mark.parametrize("kw", [{"threshold": 0.5}, {"percentile": 50}, {}])
def test_semantic_cuts_where_the_topic_changes(kw):
    got = semantic_chunk(THREAD, fake_embed, target=512, **kw)
    assert contents(got) == ["I cannot log in. The login page rejects my password.",
                             "Also my invoice is wrong. The billing charge doubled."]
    assert len(chunk(THREAD, "E", 512, 0)) == 1  # E keeps login and billing together


def test_semantic_paragraph_units_and_budget():
    doc = Document("t", "T", "Login fails.\n\nPassword locked.\n\nRefund please.")
    assert contents(semantic_chunk(doc, fake_embed, threshold=0.5, unit="paragraph")) == [
        "Login fails.\n\nPassword locked.", "Refund please."]
    assert unit_spans(doc.text, 0, len(doc.text), "paragraph") == [(0, 12), (14, 30), (32, 46)]
    assert contents(semantic_chunk(doc, fake_embed, target=20, threshold=-1.0)) == [
        "Login fails.", "Password locked.", "Refund please."]


# --- wiki: breaks chosen by a model, and the rule-based alternative ---

WIKI = Document("w", "River", (
    "## Course\n"
    "The river rises in the hills.\n\n"
    "It flows east.\n\n"
    "### Tributaries\n"
    "Two brooks join it.\n\n"
    "## History\n"
    "A mill stood here.\n"
))


def test_parse_breaks_names_every_kind_of_answer():
    assert parse_breaks("2, 4", 5) == ParsedBreaks((2, 4), "ok", (2, 4))
    assert parse_breaks("[3] and [3], 9", 5) == ParsedBreaks((3,), "ok", (3, 3, 9))
    assert parse_breaks("Answer: paragraphs 2 & 4", 5) == ParsedBreaks((2, 4), "ok", (2, 4))
    assert parse_breaks("1. The river.\n2. It flows.", 5) == ParsedBreaks((), "prose", (1, 2))
    assert parse_breaks("Paragraphs 3 and 5 begin new topics.", 5) == ParsedBreaks((3, 5), "ok", (3, 5))
    assert parse_breaks("3. It lies on the river that flows east.", 5).status == "prose"
    assert parse_breaks("[1]\n[2]\n[3]\n[4]", 9) == ParsedBreaks((), "counting", (1, 2, 3, 4))
    assert parse_breaks("2, 3, 4", 9).status == "counting" and parse_breaks("2, 3", 9).status == "ok"
    assert parse_breaks("1. [1]\n2. [2]\n3. [3]", 9).status == "counting"
    assert parse_breaks("3, 4, 5", 9).status == "ok"
    assert parse_breaks("Paragraph 1.", 5) == ParsedBreaks((), "no break", (1,))
    assert parse_breaks("2, 3, 4, 5", 5) == ParsedBreaks((), "every paragraph", (2, 3, 4, 5))
    assert parse_breaks("1955 and 0", 5) == ParsedBreaks((), "out of range", (1955, 0))
    assert parse_breaks("The page is about rivers.", 5) == ParsedBreaks((), "unparseable", ())


def test_breaks_prompt_numbers_and_cuts_paragraphs():
    prompt = breaks_prompt(["a  b\nc", "x" * 200], show=5)
    assert "\n[1] a b c\n[2] xxxxx\n" in prompt
    assert prompt.endswith("separated by commas.")
    assert breaks_prompt(["a"], template="<{paragraphs}>") == "<[1] a>"


def test_llm_chunk_with_a_fake_model():
    prompts: list[str] = []

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        return "Paragraph 2."
    got = llm_chunk(WIKI, ask=ask)
    assert len(prompts) == 1 and "[4] A mill stood here." in prompts[0]
    assert contents(got) == ["The river rises in the hills.", "It flows east.\n\n### Tributaries\nTwo brooks join it.",
                             "A mill stood here."]
    assert contents(llm_chunk(WIKI, ask=lambda p: "no idea")) == contents(chunk(WIKI, "E", 512, 0))


def test_llm_windows_number_from_one_and_skip_a_lone_paragraph():
    doc = Document("p", "P", "\n\n".join(f"Para {i}." for i in range(21)))
    calls = llm_break_calls(doc, lambda p: "3", window=10)
    assert [c.first for c in calls] == [0, 10]  # the 21st paragraph alone gets no call
    assert "[1] Para 10." in calls[1].prompt and "[11]" not in calls[1].prompt
    assert break_offsets(doc, calls) == {doc.text.index("Para 2."), doc.text.index("Para 12.")}
    bad = BreakCall(0, "", "1, 2", parse_breaks("1, 2", 2))
    assert break_offsets(doc, [bad]) == set()  # "every paragraph" falls back to no break


def test_heading_chunk_breaks_before_sub_headings():
    assert contents(heading_chunk(WIKI)) == ["The river rises in the hills.\n\nIt flows east.",
                                             "### Tributaries\nTwo brooks join it.", "A mill stood here."]


# --- the genre table and errors ---

def test_genre_table_and_errors():
    assert list(GENRE_CHUNKERS) == ["legal", "api", "threads", "wiki"]
    assert genre_chunker("api") is function_chunk
    with pytest.raises(ValueError, match=r"'novel'.*'legal', 'api', 'threads', 'wiki'"):
        genre_chunker("novel")
    with pytest.raises(ValueError, match="exactly one"):
        semantic_chunk(THREAD, fake_embed, threshold=0.5, percentile=90)
    with pytest.raises(ValueError, match=r"percentile=120.*\[0, 100\]"):
        semantic_chunk(THREAD, fake_embed, percentile=120)
    with pytest.raises(ValueError, match=r"unit='word'.*'sentence', 'paragraph'"):
        semantic_chunk(THREAD, fake_embed, unit="word")
    with pytest.raises(ValueError, match="one row per text"):
        semantic_chunk(THREAD, lambda texts: np.ones((1, 3)))
    with pytest.raises(ValueError, match="target.*0"):
        clause_chunk(LEGAL, target=0)
    with pytest.raises(ValueError, match="window=1"):
        llm_break_calls(WIKI, lambda p: "", window=1)


def test_recursive_spans_keeps_an_unsplittable_sentence_whole():
    text = "A very long sentence without an end"
    assert recursive_spans(text, 0, len(text), [], 5) == [(0, len(text))]
    assert recursive_spans("  \n ", 0, 4, [], 5) == []


# --- properties, for every chunker ---

PIECES = ["## Terms", "## Terms", "### Sub", "1. Scope of the grant.", "1.1. Grants.", "2.3.4 Deep.",
          "(a) the cap;", "(b) except fraud.", "(i) one", "a. Notice.", "Section 5 – Liability.",
          "Parameters\n----------", "x : int\n    The x.", "Raises\n------", "ValueError\n    If bad.",
          "The login fails.", "Billing is monthly.", "My invoice doubled!", "no end punctuation",
          "A long clause that keeps going " * 4 + "until it ends.", "Résumé? Oui! 日本語。", "e.g. this", "   "]
SEPARATORS = ["\n", "\n\n", " ", "\r\n", "\n\n\n"]
TEXTS = st.one_of(
    st.lists(st.tuples(st.sampled_from(PIECES), st.sampled_from(SEPARATORS)), max_size=25)
    .map(lambda xs: "".join(p + s for p, s in xs)),
    st.lists(st.sampled_from([*"ab .!?\n#(1)-:", "## ", "\n\n"]), max_size=60).map("".join),
)
PROPERTY = settings(derandomize=True, max_examples=80, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


def fixed_ask(prompt: str) -> str:
    return "2, 3" if "[3]" in prompt else "none"


CHUNKERS = {
    "clauses": clause_chunk,
    "functions": function_chunk,
    "semantic-threshold": lambda d, target: semantic_chunk(d, fake_embed, target, threshold=0.8),
    "semantic-percentile": lambda d, target: semantic_chunk(d, fake_embed, target, percentile=60),
    "semantic-paragraphs": lambda d, target: semantic_chunk(d, fake_embed, target, threshold=0.8, unit="paragraph"),
    "llm-breaks": lambda d, target: llm_chunk(d, target, ask=fixed_ask, window=4),
    "headings": heading_chunk,
}


def assert_contract(doc: Document, chunks, target: int) -> None:
    """Offsets, header, order, budget (or one unsplittable sentence), and no non-whitespace lost."""
    covered = bytearray(len(doc.text))
    for sec in sections(doc.text):  # heading lines live in the header, as in chapter 2
        covered[sec.start:sec.body] = b"\x01" * (sec.body - sec.start)
    previous_end = 0
    for i, c in enumerate(chunks):
        assert doc.text[c.start:c.end] == c.content and c.content.strip() == c.content and c.content
        assert c.text == header(doc.title, c.section) + "\n" + c.content and c.index == i
        assert c.start >= previous_end, "chunks overlap or go back"
        assert len(c.content) <= target or len(sentence_spans(doc.text, c.start, c.end)) == 1
        previous_end = c.end
        covered[c.start:c.end] = b"\x01" * (c.end - c.start)
    assert [i for i, ch in enumerate(doc.text) if not ch.isspace() and not covered[i]] == []


@pytest.mark.parametrize("name", list(CHUNKERS))
@PROPERTY
@given(text=TEXTS, target=st.sampled_from([12, 40, 100, 512]))
def test_contract_coverage_order_budget(name, text, target):
    doc = Document("d", "Doc", text)
    assert_contract(doc, CHUNKERS[name](doc, target=target), target)


@pytest.mark.parametrize("name", ["clauses", "functions", "semantic-threshold", "semantic-paragraphs", "headings"])
@PROPERTY
@given(body=TEXTS, target=st.sampled_from([12, 40, 512]))
def test_a_repeated_section_chunks_the_same_at_its_own_offsets(name, body, target):
    """Text repeated inside one document: the second copy's chunks are the first's, shifted (no jump back)."""
    once = "## Part\n" + body + "\n"
    one = CHUNKERS[name](Document("d", "Doc", once), target=target)
    two = CHUNKERS[name](Document("d", "Doc", once + once), target=target)
    shift = len(once)
    assert [(c.start, c.end, c.content) for c in two] == (
        [(c.start, c.end, c.content) for c in one] + [(c.start + shift, c.end + shift, c.content) for c in one])


@PROPERTY
@given(body=TEXTS)
def test_llm_breaks_in_a_repeated_page_land_on_both_copies(body):
    once = "## Part\n" + body + "\n"
    doc = Document("d", "Doc", once + once)
    copies = [c for c in chunk_at_breaks(doc, set(), 40) if c.start >= len(once)]
    assert all(doc.text[c.start:c.end] == c.content for c in copies)
    assert len(copies) == len(chunk_at_breaks(Document("d", "Doc", once), set(), 40))


# --- the stored trial (benchmarks/llm_breaks.py): its parses and prompts are today's ---

STORED = RESULTS_DIR / "llm_breaks.json"


@pytest.fixture(scope="module")
def stored() -> dict:
    return json.loads(STORED.read_text())


def test_stored_answers_parse_as_stored(stored):
    """A changed parser must rerun the trial: every stored parse equals today's parse of the stored answer."""
    calls = [c for t in stored["trials"] for p in t["pages"] for c in p["calls"]]
    assert len(calls) > 0
    for c in calls:
        again = parse_breaks(c["answer"], c["paragraphs"])
        assert (list(again.breaks), again.status, list(again.numbers)) == (c["breaks"], c["status"], c["numbers"])


def test_stored_prompts_are_rebuilt_from_the_pages(stored, corpus):
    """The stored prompts are what `llm_break_calls` asks today about the same pages, from the corpus it names."""
    pages = {"main corpus": lambda: corpus, "wiki genre corpus": lambda: load_genre("wiki")}
    assert stored["source"] in pages, f"{STORED} names an unknown source {stored['source']!r}"
    docs = {d.id: d for d in pages[stored["source"]]()}
    for trial in stored["trials"]:
        for page in trial["pages"]:
            prompts = [c.prompt for c in llm_break_calls(docs[page["id"]], lambda p: "", template=trial["template"])]
            assert prompts == [c["prompt"] for c in page["calls"]], page["id"]
