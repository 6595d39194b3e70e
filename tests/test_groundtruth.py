"""Validation of the ground truth: each kind of bad line is rejected with a clear error."""

import json

import pytest

from ragcourse.corpus import Document
from ragcourse.groundtruth import (
    GroundTruthError,
    evaluation_strings,
    find_leaks,
    load_out_of_domain,
    load_questions,
    needle_position,
    queries,
)

TOY = [
    Document("a", "Doc A", "Intro line.\n\n## Setup\n\nRun the tool\nwith care.\n\n## Shared\n\nSame text."),
    Document("b", "Doc B", "## Other\n\nSame text.\n\nA unique line in b."),
]
GOOD = {"id": "q1", "doc": "a", "needle": "Run the tool with care.", "question": "How?", "ticket": "help"}


def write(tmp_path, *records, raw=None):
    path = tmp_path / "q.jsonl"
    lines = [json.dumps(r) for r in records] if raw is None else raw
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_good_line_loads_and_needle_matches_across_hard_wrap(tmp_path):
    [q] = load_questions(write(tmp_path, GOOD), corpus=TOY)
    assert q.needle == "Run the tool with care."
    assert [x.id for x in queries([q])] == ["q1/doc", "q1/ticket"]
    assert [x.text for x in queries([q])] == ["How?", "help"]
    assert 0 < needle_position(q, TOY) < 1


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"needle": "not in the corpus"}, "not found"),
        ({"needle": "Same text."}, "occurs 2 times"),
        ({"needle": "A unique line in b."}, "not in 'a'"),
        ({"needle": "Setup"}, "heading"),
        ({"doc": "zzz"}, "unknown document"),
        ({"question": ""}, "non-empty"),
        ({"ticket": 7}, "non-empty"),
    ],
)
def test_bad_records_are_rejected(tmp_path, change, message):
    with pytest.raises(GroundTruthError, match=message):
        load_questions(write(tmp_path, {**GOOD, **change}), corpus=TOY)


def test_missing_and_extra_fields_are_named(tmp_path):
    broken = {k: v for k, v in GOOD.items() if k != "ticket"} | {"answer": "x"}
    with pytest.raises(GroundTruthError, match=r"missing \['ticket'\], unexpected \['answer'\]"):
        load_questions(write(tmp_path, broken), corpus=TOY)


def test_malformed_json_reports_the_line(tmp_path):
    path = write(tmp_path, raw=[json.dumps(GOOD), "{not json"])
    with pytest.raises(GroundTruthError, match=r"q.jsonl:2: not valid JSON"):
        load_questions(path, corpus=TOY)


def test_non_object_line_is_rejected(tmp_path):
    with pytest.raises(GroundTruthError, match="expected a JSON object"):
        load_questions(write(tmp_path, raw=["[1, 2]"]), corpus=TOY)


def test_duplicate_ids_are_rejected(tmp_path):
    other = {**GOOD, "needle": "Intro line."}
    with pytest.raises(GroundTruthError, match=r"duplicate id 'q1' \(first on line 1\)"):
        load_questions(write(tmp_path, GOOD, other), corpus=TOY)


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(GroundTruthError, match="file not found"):
        load_questions(tmp_path / "nope.jsonl", corpus=TOY)


def test_out_of_domain_kinds(tmp_path):
    path = tmp_path / "ood.jsonl"
    path.write_text(json.dumps({"id": "o1", "query": "paella?", "kind": "absurd"}) + "\n")
    assert load_out_of_domain(path)[0].kind == "absurd"
    path.write_text(json.dumps({"id": "o1", "query": "paella?", "kind": "weird"}) + "\n")
    with pytest.raises(GroundTruthError, match=r"'weird' is not one of \['near', 'absurd'\]"):
        load_out_of_domain(path)


def test_the_committed_ground_truth_is_valid(corpus):
    questions = load_questions(corpus=corpus)
    original = load_questions(corpus=corpus, subset="original")
    assert len(original) == 32 and [q.id for q in original] == [f"q{i:02d}" for i in range(1, 33)]
    assert len(questions) == 210 and questions[:32] == original
    assert len(queries(questions)) == 420
    assert {q.doc for q in original} == {d.id for d in corpus}, "every document is asked about"
    positions = [needle_position(q, corpus) for q in original]
    assert min(positions) < 0.2 and max(positions) > 0.8, "needles from beginnings and ends"
    ood = load_out_of_domain()
    assert len(ood) == 30
    assert sum(o.kind == "near" for o in ood) == 21
    assert sum(o.kind == "absurd" for o in ood) == 9


# --- the needle guard ----------------------------------------------------------------------------


def test_evaluation_strings_are_needle_question_ticket_then_out_of_domain(tmp_path):
    ood = tmp_path / "ood.jsonl"
    ood.write_text(json.dumps({"id": "o1", "query": "paella?", "kind": "absurd"}) + "\n")
    other = {**GOOD, "id": "c1", "needle": "N2", "question": "Q2", "ticket": "T2"}
    (tmp_path / "held").mkdir()
    held_out = write(tmp_path / "held", other)
    assert evaluation_strings([write(tmp_path, GOOD), held_out], ood) == [
        "Run the tool with care.", "How?", "help", "N2", "Q2", "T2", "paella?"]


def test_the_guard_covers_every_committed_evaluation_string():
    # 32 original + 178 added development questions and 32 held-out ones, three strings each,
    # and 30 out-of-domain queries
    strings = evaluation_strings()
    assert len(strings) == 3 * 32 + 3 * 178 + 3 * 32 + 30
    assert "How do I set up intersphinx so my Sphinx docs can link to classes in the Python standard " \
           "library documentation?" in strings


def test_find_leaks_ignores_case_and_whitespace_and_never_spans_two_texts():
    texts = ["Lists must\n  start a NEW paragraph.", "grid", "tables are drawn"]
    assert find_leaks(texts, ["a new paragraph", "grid tables", "  "]) == ["a new paragraph"]
    assert find_leaks(["nothing to see"], ["a new paragraph"]) == []


def test_find_leaks_catches_a_planted_needle():
    needle = evaluation_strings()[0]  # q01's needle
    planted = "Some preamble. " + needle.upper().replace(" ", "\n   ") + " More text."
    clean = ["How do I purge tasks?", "Use the purge command of the worker."]
    assert find_leaks(clean) == []
    assert find_leaks([*clean, planted]) == [needle]


def test_subsets_are_checked_and_files_may_not_share_ids(tmp_path, corpus, monkeypatch):
    with pytest.raises(ValueError, match=r"subset='dev': expected one of \['all', 'original'\]"):
        load_questions(corpus=corpus, subset="dev")
    from ragcourse import groundtruth

    copy = tmp_path / "added.jsonl"
    copy.write_text(groundtruth.QUESTIONS_FILE.read_text(encoding="utf-8").splitlines()[0] + "\n")
    monkeypatch.setattr(groundtruth, "ADDED_FILE", copy)
    with pytest.raises(GroundTruthError, match=r"ids \['q01'\] occur in more than one file"):
        load_questions(corpus=corpus)


def test_a_subset_with_a_path_is_refused_not_ignored(corpus):
    from ragcourse import groundtruth

    with pytest.raises(ValueError, match=r"subset='original' with path=.*questions\.jsonl.*read whole"):
        load_questions(groundtruth.QUESTIONS_FILE, corpus=corpus, subset="original")
    whole = load_questions(groundtruth.QUESTIONS_FILE, corpus=corpus, subset="all")
    assert [q.id for q in whole] == [q.id for q in load_questions(corpus=corpus, subset="original")]
