"""Question sets by procedure (chapter 12): hostile lines rejected by file and line, the committed sets valid."""

import json
import shutil
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragcourse.groundtruth import GroundTruthError
from ragcourse.paths import RESULTS_DIR
from ragcourse.question_sets import (
    GENERATED_SHA256,
    PROCEDURES,
    QUESTION_SETS_DIR,
    extract_question,
    file_sha256,
    load_grades,
    load_set,
    summarize,
    word_overlap,
)
from ragcourse.words import collapse
from tests.test_groundtruth import TOY  # the same two-document corpus as the ground truth's tests

GOOD = {"id": "t1", "procedure": "topic-first", "doc": "a", "needle": "Run the tool with care.",
        "question": "How do I run the tool?", "source": "Setup", "answerable": True}
OPEN = {"id": "t2", "procedure": "topic-first", "doc": "b", "question": "Is there a GUI?", "source": "Other",
        "answerable": False, "note": "not answered by the corpus"}


def write(tmp_path, *records, raw=None, name="topic-first.jsonl"):
    path = tmp_path / name
    lines = [json.dumps(r) for r in records] if raw is None else raw
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_good_lines_load_with_their_procedure_and_an_unanswerable_one_keeps_its_note(tmp_path):
    answered, unanswered = load_set("topic-first", write(tmp_path, GOOD, OPEN), corpus=TOY)
    assert (answered.procedure, answered.needle, answered.answerable) == ("topic-first", GOOD["needle"], True)
    assert (unanswered.needle, unanswered.answerable, unanswered.note) == (None, False, OPEN["note"])
    assert summarize([answered, unanswered]).questions == 2


@pytest.mark.parametrize(("record", "message"), [
    ({**GOOD, "procedure": "generated"}, r"topic-first.jsonl:2: procedure 'generated', expected 'topic-first'"),
    ({**GOOD, "needle": "not in the corpus"}, r"topic-first.jsonl:2: t1: needle not found"),
    ({**GOOD, "needle": "Same text."}, r"topic-first.jsonl:2: t1: needle occurs 2 times"),
    ({**GOOD, "needle": "A unique line in b."}, r"topic-first.jsonl:2: t1: needle is in 'b', not in 'a'"),
    ({**GOOD, "needle": "Setup"}, r"topic-first.jsonl:2: t1: needle is \(part of\) a section heading"),
    ({k: v for k, v in GOOD.items() if k != "needle"}, r":2: t1: marked answerable, so it needs a needle"),
    ({**GOOD, "note": "why"}, r":2: t1: marked answerable, so it needs a needle and no note"),
    ({**OPEN, "id": "t1", "needle": "Same text."}, r":2: t1: marked not answerable, so it needs a note"),
    ({k: v for k, v in OPEN.items() if k != "note"} | {"id": "t1"}, r":2: t1: marked not answerable"),
    ({**OPEN, "id": "t1", "doc": "zzz"}, r":2: t1: unknown document 'zzz'"),
    ({k: v for k, v in GOOD.items() if k != "answerable"}, r":2: missing the flag 'answerable'"),
    ({**GOOD, "answerable": "yes"}, r":2: fields \['answerable'\] must be strings .* true or false"),
    ({**GOOD, "question": " "}, r":2: fields \['question'\] must be strings \(required ones non-empty\)"),
    ({**GOOD, "ticket": "x"}, r":2: .*unexpected \['ticket'\]"),
])
def test_a_hostile_line_is_named_by_file_line_and_problem(tmp_path, record, message):
    with pytest.raises(GroundTruthError, match=message):
        load_set("topic-first", write(tmp_path, OPEN, record), corpus=TOY)


def test_malformed_json_a_repeated_id_and_an_unknown_procedure(tmp_path):
    with pytest.raises(GroundTruthError, match=r"topic-first.jsonl:2: not valid JSON"):
        load_set("topic-first", write(tmp_path, raw=[json.dumps(GOOD), "{oops"]), corpus=TOY)
    with pytest.raises(GroundTruthError, match=r":2: duplicate id 't1' \(first on line 1\)"):
        load_set("topic-first", write(tmp_path, GOOD, {**OPEN, "id": "t1"}), corpus=TOY)
    with pytest.raises(ValueError, match=r"procedure='ticket-first': expected one of"):
        load_set("ticket-first", corpus=TOY)


def test_a_generated_file_must_have_the_recorded_hash(tmp_path):
    path = write(tmp_path, {**GOOD, "procedure": "generated"}, name="generated.jsonl")
    assert len(load_set("generated", path, corpus=TOY, expected_sha256=file_sha256(path))) == 1
    with pytest.raises(GroundTruthError, match=r"generated.jsonl: sha256 \w+ is not the stored run's 0+: "
                                               r"the file was edited; rerun benchmarks/generate_questions.py"):
        load_set("generated", path, corpus=TOY, expected_sha256="0" * 64)


def test_word_overlap_by_hand():
    # question tokens how, do, i, set, the, width (6); of them "set", "the", "width" are in the needle
    assert word_overlap("How do I set the width?", "Set the width with :width:.") == 3 / 6
    assert word_overlap("?", "anything") == 0.0


@given(st.text(), st.text())
def test_word_overlap_is_a_share(query, needle):
    assert 0.0 <= word_overlap(query, needle) <= 1.0
    assert word_overlap(query, query) in (0.0, 1.0)


@pytest.mark.parametrize(("reply", "expected"), [
    ("What does the width option set?", ("What does the width option set?", "ok")),
    ('Question: "How wide is the image?"\nIt is...', ("How wide is the image?", "ok")),
    ("Sure!\n1. **Which option sets the width?** Width.", ("Which option sets the width?", "ok")),
    ("The width option sets the width.", (None, "no question mark")),
    ("Width?", (None, "fewer than 4 words")),
    ("The width option sets the width of the image?", (None, "copies the needle")),
    ("Why? The width option sets the width of the image. Really?", (None, "fewer than 4 words")),
])
def test_the_validity_rule_by_hand(reply, expected):
    assert extract_question(reply, "The width option sets the width of the image.") == expected


def _needles_unique(questions, corpus):
    texts = [collapse(d.text) for d in corpus]
    return all(sum(t.count(collapse(q.needle)) for t in texts) == 1 for q in questions if q.answerable)


def test_the_committed_sets(corpus):
    sets = {p: load_set(p, corpus=corpus) for p in PROCEDURES}
    for procedure, questions in sets.items():
        assert {q.procedure for q in questions} == {procedure}
        assert len({q.id for q in questions}) == len(questions)
        assert _needles_unique(questions, corpus), procedure
    for procedure in ("needle-first", "topic-first"):
        assert sum(q.answerable for q in sets[procedure]) >= 60, procedure
        assert summarize(sets[procedure]).documents == 13, procedure
    assert summarize(sets["needle-first"]).overlap == 0.343  # chapter 1's lab: "ours (210)", doc phrasing
    topic = sets["topic-first"]
    assert all(q.source for q in topic), "every topic-first question names its heading"
    assert len(topic) == 84 and sum(not q.answerable for q in topic) == 17


def test_the_generated_set_is_the_stored_run_unedited(tmp_path, corpus):
    import importlib.util

    stored = json.loads((RESULTS_DIR / "generated_questions.json").read_text(encoding="utf-8"))
    path = QUESTION_SETS_DIR / "generated.jsonl"
    assert file_sha256(path) == GENERATED_SHA256 == stored["set_file_sha256"]
    for row in stored["rows"]:  # the verdicts follow from the raw replies by the stated rule
        assert extract_question(row["reply"], row["needle"]) == (row["question"], row["verdict"])
    # SmolLM2-135M wrote a question in 73 of its 330 replies (256 without a question mark, one copy of its needle)
    assert len(stored["rows"]) == 330 and stored["verdicts"] == {"ok": 73, "no question mark": 256,
                                                                  "copies the needle": 1}
    spec = importlib.util.spec_from_file_location("generate_questions", "benchmarks/generate_questions.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.set_lines(stored["rows"]) == path.read_text(encoding="utf-8")
    edited = tmp_path / "generated.jsonl"
    shutil.copy(path, edited)
    edited.write_text(path.read_text(encoding="utf-8").replace("?", "??", 1), encoding="utf-8")
    with pytest.raises(GroundTruthError, match="the file was edited"):
        load_set("generated", edited, corpus=corpus)


def test_grades_are_checked_against_the_set(tmp_path):
    questions = load_set("topic-first", write(tmp_path, GOOD, OPEN), corpus=TOY)
    grades = tmp_path / "grades.jsonl"
    grades.write_text('{"id": "t1", "grade": "2"}\n{"id": "t2", "grade": "0"}\n', encoding="utf-8")
    assert load_grades(questions, grades) == {"t1": 2, "t2": 0}
    for text, message in [('{"id": "t1", "grade": "3"}\n', r"grades.jsonl:1: grade '3' is not one of"),
                          ('{"id": "t9", "grade": "1"}\n', r"grades.jsonl:1: 't9' is not a question of the set"),
                          ('{"id": "t1", "grade": "1"}\n', r"grades.jsonl: no grade for \['t2'\]")]:
        grades.write_text(text, encoding="utf-8")
        with pytest.raises(GroundTruthError, match=message):
            load_grades(questions, grades)


def test_the_hand_grades_of_the_generated_set(corpus):
    grades = load_grades(load_set("generated", corpus=corpus))
    assert sorted(Counter(grades.values()).items()) == [(0, 36), (1, 29), (2, 8)]  # as data/README.md says
