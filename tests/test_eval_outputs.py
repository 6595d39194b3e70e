"""`ragcourse eval` on a folder of RST documents: failures first, phrasings apart, CSV and TREC files, and the
inputs that could lose a user's files. A stand-in embedder (hashed 8-dim vectors) keeps these fast; the
real model runs in test_eval_cli.py and test_wheel_install.py. Every document is written for the test.
"""

from __future__ import annotations

import csv
import json
import os
from types import SimpleNamespace
from unittest.mock import ANY

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcourse import dense, evaluation
from ragcourse.cli import main, report, runs
from ragcourse.evaluation import query_share, share_over_questions

ROPE = """Rope handling
=============

Coil the rope in loops of equal length so it pays out without tangles.

Knots
-----

A figure eight knot at each end stops the rope sliding through a belay device.

Storage
-------

Dry the rope away from sunlight before you store it.
"""

TENTS = """Tent care
=========

Shake the sand out of the tent before you pack it away.

Pitching
--------

Pitch the tent on flat ground, away from dry stream beds.

Repairs
-------

A torn mesh panel is patched from the inside with repair tape.
"""

STOVES = """Stove safety
============

Gas stoves need a wind shield on exposed ridges.

Fumes
-----

Never cook inside the inner tent, because carbon monoxide gathers there.

Fuel
----

Spare canisters are kept upright in the shade during the day.
"""

QUESTIONS = [
    {"id": "knot", "needle": "A figure eight knot at each end stops the rope sliding through a belay device.",
     "question": "Which knot stops a rope sliding through a belay device?", "ticket": "rope slipped out, help"},
    {"id": "dry", "needle": "Dry the rope away from sunlight before you store it.",
     "question": "How is a rope dried before storage?", "ticket": "wet cord what now"},
    {"id": "pitch", "needle": "Pitch the tent on flat ground, away from dry stream beds.",
     "question": "Where should a tent be pitched?", "ticket": "woke up in a puddle"},
    {"id": "fumes", "needle": "Never cook inside the inner tent, because carbon monoxide gathers there.",
     "question": "Why never cook inside the inner tent?", "ticket": "headache after breakfast"},
    {"id": "fuel", "needle": "Spare canisters are kept upright in the shade during the day.",
     "question": "How are spare gas canisters kept?", "ticket": "canister hissing"},
]


class HashedModel:
    """A stand-in sentence-transformers model: 8-dim unit vectors from a hash of the text."""

    def get_embedding_dimension(self):
        return 8

    def encode(self, texts, **kwargs):
        rows = [np.frombuffer(dense.text_key(t).encode()[:8], dtype=np.uint8).astype(np.float32) + 1 for t in texts]
        return np.stack([r / np.linalg.norm(r) for r in rows])


@pytest.fixture
def stand_in(monkeypatch, tmp_path):
    def load(cache_dir=None):
        return dense.Embedder(model=HashedModel(), name="stand-in", fingerprint="stand-in", cache_dir=cache_dir)

    monkeypatch.setattr(dense, "load_embedder", load)
    monkeypatch.setenv("RAGCOURSE_CACHE", str(tmp_path / "user-cache"))


def write_folder(root):
    root.mkdir(parents=True)
    for name, text in (("rope.rst", ROPE), ("tents.rst", TENTS), ("stoves.rst", STOVES)):
        (root / name).write_text(text, encoding="utf-8")
    (root / "diagram.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(16))
    return root


def write_questions(path, rows=QUESTIONS):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def rst_eval(tmp_path, stand_in, capsys):
    docs, questions = write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl")
    argv = ["eval", str(docs), "--questions", str(questions), "--methods", "bm25,dense", "--k", "1,2",
            "--baseline", "E/dense", "--out", str(tmp_path / "out")]
    assert main(argv) == 0
    results = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    return tmp_path / "out", results, capsys.readouterr()


def test_an_rst_folder_has_sections_ranks_and_phrasings(rst_eval, tmp_path):
    out, results, printed = rst_eval
    assert results["corpus"]["documents"] == 3 and results["corpus"]["sections"] == 6  # two per page
    assert results["corpus"]["skipped"] == ["diagram.png"] and results["corpus"]["failed"] == []
    assert results["ks"] == [1, 2]
    for run in results["runs"]:
        ranks = {d["query"]: d["rank"] for d in run["per_query"]}
        assert len(ranks) == 10 and all(isinstance(r, int) and r >= 1 for r in ranks.values())
        for phrasing in ("doc", "ticket"):
            own = [r for q, r in ranks.items() if q.endswith("/" + phrasing)]
            figures = run["by_phrasing"][phrasing]
            assert figures["queries"] == 5
            assert figures["mrr"] == round(sum(1 / r for r in own) / 5, 3)
            assert figures["recall"]["1"] == round(sum(r == 1 for r in own) / 5, 3)
        assert run["mrr"] == round(sum(1 / r for r in ranks.values()) / 10, 3)
        assert run["ndcg"]["2"] == round(sum((1.0 if r == 1 else 1 / np.log2(3) if r == 2 else 0.0)
                                             for r in ranks.values()) / 10, 3)
        trec = [line.split() for line in (out / f"run-{run['label'].replace('/', '-')}.trec").read_text().splitlines()]
        doc_ranks = {d["query"]: next(int(p[3]) for p in trec if p[0] == d["query"] and p[2].startswith(d["doc"] + "#"))
                     for d in run["per_query"]}  # the first chunk of the needle's document, by hand from the run file
        for k in ("1", "2"):
            assert run["doc_recall"][k] == round(sum(r <= int(k) for r in doc_ranks.values()) / 10, 3)
            assert run["doc_recall"][k] >= run["recall"][k]
    assert "1 file(s) skipped: not documents by type" in printed.out and "FAILED" not in printed.out
    assert "MRR ticket" in printed.out and "missed@2" in printed.out  # the terminal summary table
    assert (tmp_path / "user-cache" / "embeddings" / "stand-in.npz").is_file()  # $RAGCOURSE_CACHE, not the checkout


def test_missed_questions_show_what_was_retrieved_instead(rst_eval):
    out, results, _ = rst_eval
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "id='missed'" in page and "id='phrasing'" in page
    for run in results["runs"]:
        missed = report.missed(run, 2)
        assert [d["rank"] for d in missed] == sorted((d["rank"] for d in missed), reverse=True)  # worst first
        assert {d["query"] for d in missed} == {d["query"] for d in run["per_query"] if d["rank"] > 2}
        for d in run["per_query"]:
            if d["rank"] > 1:
                first, held = d["first"], d["needle_chunk"]
                assert first["doc"].endswith(".rst") and first["locator"].startswith(first["doc"] + "#char=")
                line, column = map(int, first["source"].removeprefix(first["doc"] + ":").split(":"))
                source = (out.parent / "docs" / first["doc"]).read_text(encoding="utf-8").split("\n")
                assert source[line - 1][column - 1:].split()[:2] == first["excerpt"].split()[:2]  # its place there
                assert first["excerpt"] and first["id"] != held["id"]
                assert " ".join(d["text"].split()) and held["excerpt"].startswith(" ".join(
                    next(q["needle"] for q in QUESTIONS if q["id"] == d["question"]).split()[:3]))
            else:
                assert d["first"] is None
    all_missed = [d for run in results["runs"] for d in report.missed(run, 2)]
    assert all_missed, "the stand-in embedder and BM25 miss some ticket phrasings at 2"
    assert all(f"<td>{d['text']}</td>" in page for d in all_missed)


def test_csv_and_trec_files_hold_one_row_per_query(rst_eval):
    out, results, _ = rst_eval
    for run in results["runs"]:
        name = run["label"].replace("/", "-")
        with open(out / f"queries-{name}.csv", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert [r["query"] for r in rows] == [d["query"] for d in run["per_query"]]
        assert [int(r["rank"]) for r in rows] == [d["rank"] for d in run["per_query"]]
        lines = [line.split() for line in (out / f"run-{name}.trec").read_text().splitlines()]
        assert all(len(parts) == 6 and parts[1] == "Q0" and parts[5] == name for parts in lines)
        for d in run["per_query"]:  # ranks 1, 2, ... with falling scores; the needle's chunk at its rank
            mine = [p for p in lines if p[0] == d["query"]]
            assert [int(p[3]) for p in mine] == list(range(1, len(mine) + 1))
            assert [int(p[4]) for p in mine] == sorted((int(p[4]) for p in mine), reverse=True)
            assert mine[d["rank"] - 1][2] == d["needle_chunk"]["id"]
    qrels = [line.split() for line in (out / "qrels-E.trec").read_text().splitlines()]
    assert len(qrels) == 10 and all(p[1] == "0" and p[3] == "1" for p in qrels)


def test_the_baseline_and_each_rerank_are_paired(rst_eval):
    _, results, _ = rst_eval
    assert {(p["label"], p["against"]["label"]) for p in results["paired"]} == {("E/bm25", "E/dense")}
    assert len(results["paired"]) == 3  # R@1, R@2, MRR


def test_an_unknown_baseline_or_k_exits_2(tmp_path, stand_in, capsys):
    docs, questions = write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl")
    assert main(["eval", str(docs), "--questions", str(questions), "--baseline", "E/sparse",
                 "--out", str(tmp_path / "out")]) == 2
    assert "--baseline 'E/sparse' is not one of this command's runs" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["eval", str(docs), "--questions", str(questions), "--k", "0,4", "--out", str(tmp_path / "out")])
    assert "k='0,4': expected comma-separated integers >= 1" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_title_or_heading_as_needle_costs_only_its_own_line(tmp_path, stand_in, capsys):
    docs, out = write_folder(tmp_path / "docs"), tmp_path / "out"
    questions = write_questions(tmp_path / "q.jsonl", QUESTIONS + [
        {"id": "title", "needle": "Stove safety", "question": "What is the stove page called?"},
        {"id": "head", "needle": "Repairs", "question": "Which section covers repairs?"}])
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert "q.jsonl:6: title: needle is (part of) the title of 'stoves.rst' ('Stove safety')" in err
    assert "q.jsonl:7: head: needle is (part of) a section heading: 'Repairs'" in err
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["questions"]["measured"] == 5 and results["runs"][0]["queries"] == 10
    assert [r["where"].rsplit("/", 1)[1] for r in results["questions"]["rejected"]] == ["q.jsonl:6", "q.jsonl:7"]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Questions left out" in page and "needle is (part of) a section heading" in page


GOOD = "".join(json.dumps(r) + "\n" for r in QUESTIONS[:3])
HOSTILE = [  # (file bytes, the line named, what is said about it); the three good questions are always measured
    (GOOD.encode() + b'{"id": "knot", "needle": "Coil the rope", "question": "?"}\n', 4,
     "duplicate id 'knot' (first on line 1)"),
    (GOOD.encode() + b'{"id": "x", "question": "no needle"}\n', 4, "missing ['needle']"),
    (GOOD.encode() + b'{"id": "x", "needle": "Coil the rope", "question": "?", "doc": "ropes.rst"}\n', 4,
     "unknown document 'ropes.rst' (a path relative to DOCS_DIR; 3 documents were read); did you mean 'rope.rst'?"),
    (GOOD.encode() + b'{"id": "x", "needle": "Coil the rope", "question": "?", "doc": "diagram.txt"}\n', 4,
     "document 'diagram.txt' could not be read (binary content (PNG image), not text)"),
    (GOOD.encode() + b'{"id": "x", "needle": "caf\xe9", "question": "?"}\n', 4, "not UTF-8 text"),
    (GOOD.encode() + b'{"id": "x", "needle": "Nowhere at all.", "question": "?"}\n', 4,
     "needle not found in the corpus: 'Nowhere at all.' (1 file(s) could not be read: it may be in one of them)"),
    (GOOD.encode() + b"// a comment in the wrong syntax\n", 4, "not valid JSON"),
    (b"\xef\xbb\xbf# my questions\r\n\r\n" + GOOD.replace("\n", "\r\n").encode() + b"{oops\r\n", 6,
     "not valid JSON"),
    (GOOD.encode() + b'{"id": "x", "needle": "Coil the rope", "question": "   "}\n', 4, "'question' is blank"),
]


@pytest.mark.parametrize(("content", "line", "reason"), HOSTILE)
def test_one_bad_question_costs_only_itself(tmp_path, stand_in, capsys, content, line, reason):
    docs, out = write_folder(tmp_path / "docs"), tmp_path / "out"
    (docs / "diagram.txt").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(8))  # a document that fails to read
    path = tmp_path / "q.jsonl"
    path.write_bytes(content)
    assert main(["eval", str(docs), "--questions", str(path), "--methods", "bm25", "--out", str(out)]) == 1
    err = capsys.readouterr().err
    assert f"ragcourse eval: left out {path}:{line}: " in err and reason in err and "Traceback" not in err
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["questions"] == {"measured": 3, "rejected": [{"where": f"{path}:{line}", "reason": ANY}]}
    assert [d["question"] for d in results["runs"][0]["per_query"][::2]] == ["knot", "dry", "pitch"]


def test_a_json_array_is_read_as_its_objects(tmp_path, stand_in):
    docs, out = write_folder(tmp_path / "docs"), tmp_path / "out"
    path = tmp_path / "q.json"
    path.write_text(json.dumps(QUESTIONS, indent=1), encoding="utf-8")
    assert main(["eval", str(docs), "--questions", str(path), "--methods", "bm25", "--out", str(out)]) == 0
    assert json.loads((out / "results.json").read_text(encoding="utf-8"))["questions"]["measured"] == 5


def _fifo(path):
    os.mkfifo(path)


def _loop(path):
    path.symlink_to(path)


@pytest.mark.parametrize(("make", "reason"), [
    (lambda p: None, "file not found"),
    (lambda p: p.mkdir(), "is a folder, not a file"),
    (_fifo, "a named pipe (FIFO), not a file: never opened"),
    (_loop, "symbolic link loop"),
    (lambda p: p.write_text("{}\n" * 3, encoding="utf-8"), "no question of"),
])
def test_a_questions_path_that_is_not_a_file_of_questions_exits_2(tmp_path, no_work, capsys, make, reason):
    docs, path = write_folder(tmp_path / "docs"), tmp_path / "q.jsonl"
    make(path)
    assert main(["eval", str(docs), "--questions", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragcourse eval: ") and str(path) in err and reason in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_too_many_questions_are_refused_before_any_work(tmp_path, no_work, capsys, monkeypatch):
    from ragcourse.cli import folder

    monkeypatch.setattr(folder, "MAX_QUESTIONS", 4)
    docs, questions = write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl")
    assert main(["eval", str(docs), "--questions", str(questions), "--out", str(tmp_path / "out")]) == 2
    assert "5 questions; eval measures at most 4" in capsys.readouterr().err


# ---------------------------------------------------------------- never lose a user's file


@pytest.fixture
def no_work(monkeypatch):
    """Fail if eval gets as far as loading an embedder: a refusal must come first."""
    monkeypatch.setattr(dense, "load_embedder", lambda *a, **k: pytest.fail("eval started working"))


@pytest.mark.parametrize("where", ["docs", "docs/report", "docs/sub/deeper"])
def test_an_out_folder_inside_the_documents_is_refused(tmp_path, no_work, capsys, where):
    docs, questions = write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl")
    (docs / "report.html").write_text("<p>my own report</p>", encoding="utf-8")
    before = sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*"))
    assert main(["eval", str(docs), "--questions", str(questions), "--out", str(tmp_path / where)]) == 2
    assert "is inside DOCS_DIR" in capsys.readouterr().err
    assert sorted(p.relative_to(docs).as_posix() for p in docs.rglob("*")) == before
    assert (docs / "report.html").read_text(encoding="utf-8") == "<p>my own report</p>"


def test_a_folder_of_someone_elses_files_is_never_written(tmp_path, no_work, capsys):
    docs, questions = write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl")
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "report.html").write_text("keep me", encoding="utf-8")
    assert main(["eval", str(docs), "--questions", str(questions), "--out", str(mine)]) == 2
    assert "holds files that ragcourse eval did not write" in capsys.readouterr().err
    assert [p.name for p in mine.iterdir()] == ["report.html"]
    assert (mine / "report.html").read_text(encoding="utf-8") == "keep me"


def test_a_second_run_replaces_only_what_the_first_wrote(tmp_path, stand_in):
    docs, questions = write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl")
    out = tmp_path / "out"
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25,dense", "--out", str(out)]) == 0
    (out / "my-notes.txt").write_text("my notes on the run", encoding="utf-8")
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--out", str(out)]) == 0
    assert (out / "my-notes.txt").read_text(encoding="utf-8") == "my notes on the run"
    assert not (out / "queries-E-dense.csv").exists()  # the first run's file, which this run did not write
    marker = json.loads((out / report.MARKER).read_text(encoding="utf-8"))
    assert sorted(p.name for p in out.iterdir()) == sorted([*marker["files"], report.MARKER, "my-notes.txt"])


# ---------------------------------------------------------------- the questions template


def test_the_needles_template_names_its_blanks_and_is_accepted_once_filled(tmp_path, stand_in, capsys):
    docs = write_folder(tmp_path / "docs")
    assert main(["needles", str(docs), "--n", "4"]) == 0
    printed = capsys.readouterr()
    records = [json.loads(line) for line in printed.out.splitlines()]
    assert len(records) == 4 and all(r["question"] == "" and r["ticket"] == "" for r in records)
    assert "Blank in every record: 'question' (required" in printed.err
    template = write_questions(tmp_path / "template.jsonl", records)
    out = tmp_path / "out"
    assert main(["eval", str(docs), "--questions", str(template), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "'question' is blank on 4 of 4 line(s): line 1 (n001), line 2 (n002)" in err
    for r in records:
        r["question"] = "What does the page say about " + r["needle"].split()[1] + "?"
    assert main(["eval", str(docs), "--questions", str(write_questions(template, records)),
                 "--methods", "bm25", "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["runs"][0]["queries"] == 4  # a blank ticket is no ticket


# ---------------------------------------------------------------- intervals around the number shown


@given(st.lists(st.tuples(st.booleans(), st.one_of(st.none(), st.booleans())), min_size=2, max_size=60))
@settings(max_examples=200, deadline=None)
def test_the_recall_interval_holds_the_recall_shown(questions):
    """Each question asked once or twice (a ticket or not): the interval is around the plain mean over queries,
    and equals the interval over questions when every question has as many phrasings."""
    ids, flags = [], []
    for i, (doc, ticket) in enumerate(questions):
        ids.append(f"q{i}/doc")
        flags.append(doc)
        if ticket is not None:
            ids.append(f"q{i}/ticket")
            flags.append(ticket)
    value, low, high = query_share(ids, flags)
    assert value == pytest.approx(np.mean(flags)) and 0 <= low <= value + 1e-12 and value - 1e-12 <= high <= 1
    if all(t is None for _, t in questions) or all(t is not None for _, t in questions):
        assert (value, low, high) == pytest.approx(tuple(share_over_questions(ids, flags)), abs=1e-12)


def test_uneven_phrasings_once_put_the_interval_beside_the_recall(tmp_path):
    """9,000 questions, a third with a ticket: the interval over question means excluded the query mean, and
    the report's plot refused negative error bars (the whole run was lost at the last step)."""
    ids = [f"q{i}/{p}" for i in range(900) for p in (("doc", "ticket") if i % 3 == 0 else ("doc",))]
    flags = [p.endswith("doc") for p in ids]
    _, old_low, old_high = share_over_questions(ids, flags)
    value, low, high = query_share(ids, flags)
    assert not old_low <= value <= old_high and low <= value <= high
    results = {"ks": [1], "runs": [{"label": "E/bm25", "recall": {"1": round(value, 3)},
                                    "recall_interval": {"1": [round(low, 3), round(high, 3)]}}]}
    assert report.recall_plot(results["runs"], [1]).startswith("<img")


def test_queries_asked_in_the_same_words_each_get_their_own_time(monkeypatch):
    """Each query's latency is one run of its step (the fastest of REPEATS), never a share of its namesakes'."""
    ticks = iter(range(1000))
    monkeypatch.setattr(evaluation.time, "perf_counter", lambda: next(ticks) / 1000)  # every call lasts 1 ms
    calls = []
    texts = ["same", "same", "same", "other"]
    qs = [SimpleNamespace(id=f"q{i}", text=t) for i, t in enumerate(texts)]
    assert runs.timed(lambda q: calls.append(q.text), qs) == pytest.approx({"q0": 1.0, "q1": 1.0, "q2": 1.0, "q3": 1.0})
    # one untimed warm-up, then REPEATS runs of each text, asked once whatever its namesakes
    assert calls == ["same"] + ["same"] * evaluation.REPEATS + ["other"] * evaluation.REPEATS


def test_a_runs_latency_says_its_statistic(rst_eval):
    """results.json and the report name the protocol behind the median and p95 (the book's, not one timing each)."""
    out, _, _ = rst_eval
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert {r["latency_ms"]["protocol"] for r in results["runs"]} == {runs.LATENCY_PROTOCOL}
    assert f"fastest of {evaluation.REPEATS} runs after one untimed warm-up" in runs.LATENCY_PROTOCOL
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "median ms/query" in page and runs.LATENCY_PROTOCOL.replace("'", "&#x27;") in page


# ---------------------------------------------------------------- the report, read on a phone and at a terminal


def test_the_report_fits_a_phone_and_captions_its_figures(rst_eval):
    out, _, printed = rst_eval
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "<meta name='viewport' content='width=device-width, initial-scale=1'>" in page
    assert page.count("<table") == page.count("<div class='scroll'><table")  # wide tables scroll in their box
    assert page.count("<figure>") == page.count("<figcaption>Figure ") == page.count("<img") == 1  # no sweep here
    assert 'alt="plot"' not in page


def test_the_books_screenshot_shows_the_report_as_it_is_written_today(rst_eval):
    """book/figures/eval-report.png is the picture scripts/screenshot_eval_report.py made, and the sections it
    recorded come in the order the report writes them now (re-run the script when this fails)."""
    import hashlib
    import re
    from pathlib import Path

    figure = Path(__file__).resolve().parents[1] / "book" / "figures" / "eval-report.png"
    made = json.loads(figure.with_suffix(".json").read_text(encoding="utf-8"))
    assert hashlib.sha256(figure.read_bytes()).hexdigest() == made["png_sha256"]
    now = re.findall(r"<(?:h2|div) id='([\w-]+)'", (rst_eval[0] / "report.html").read_text(encoding="utf-8"))
    assert [s for s in made["sections"] if s in now] == [s for s in now if s in made["sections"]]
    assert made["sections"][:2] == now[:2] == ["verdict", "runs"]  # the report opens on the answer
    assert made["sections"][-1] == now[-1] == "files"  # the files not read come last


def test_the_terminal_names_the_missed_queries(tmp_path, stand_in, capsys):
    docs, out = write_folder(tmp_path / "docs"), tmp_path / "out"
    questions = write_questions(tmp_path / "q.jsonl")
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--k", "1",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    missed = report.missed(results["runs"][0], 1)
    assert missed and f"E/bm25: {len(missed)} of 10 queries missed at 1" in printed
    for d in missed[:3]:
        assert f"  {d['query']} (rank {d['rank']}): {d['text']!r} needle in {d['needle_chunk']['locator']}" in printed


# ---------------------------------------------------------------- command-line conventions


def test_a_cache_inside_the_documents_is_refused_before_any_work(tmp_path, no_work, capsys):
    docs, questions = write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl")
    assert main(["eval", str(docs), "--questions", str(questions), "--cache-dir", str(docs / "cache"),
                 "--out", str(tmp_path / "out")]) == 2
    assert f"--cache-dir {str(docs / 'cache')!r} is inside DOCS_DIR" in capsys.readouterr().err
    assert not (docs / "cache").exists() and not (tmp_path / "out").exists()


def test_ctrl_c_exits_130_with_one_line_and_no_traceback(tmp_path, monkeypatch, capsys):
    import importlib

    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(importlib.import_module("ragcourse.cli.main"), "_eval", interrupted)
    docs, questions = write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl")
    assert main(["eval", str(docs), "--questions", str(questions), "--out", str(tmp_path / "out")]) == 130
    assert capsys.readouterr().err == "\nragcourse eval: interrupted: nothing more was written\n"


def test_a_reader_closing_the_pipe_ends_the_command_quietly(tmp_path):
    import subprocess
    import sys

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "many.md").write_text("\n\n".join(f"Sentence number {i} says something rather long about item {i}."
                                              for i in range(3000)), encoding="utf-8")
    child = subprocess.Popen([sys.executable, "-m", "ragcourse", "needles", str(docs), "--n", "3000"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    child.stdout.readline()
    child.stdout.close()  # as `| head -1` does
    assert child.wait(timeout=120) == 141
    assert child.stderr.read() == b""


def test_a_bad_out_of_domain_line_costs_only_itself(tmp_path, stand_in, capsys):
    docs, questions, out = write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl"), tmp_path / "out"
    ood = tmp_path / "ood.jsonl"
    ood.write_text('{"id": "o1", "query": "Best lasagna recipe?"}\n{"id": "o2"}\n'
                   '{"id": "o3", "query": "Capital of Mongolia?", "kind": "absurd"}\n', encoding="utf-8")
    assert main(["eval", str(docs), "--questions", str(questions), "--out-of-domain", str(ood), "--methods", "bm25",
                 "--out", str(out)]) == 1
    assert f"ragcourse eval: left out {ood}:2: required fields ['id', 'query']" in capsys.readouterr().err
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert [r["where"] for r in results["questions"]["rejected"]] == [f"{ood}:2"]
    assert results["sweep"][-1]["cut"] is None and results["sweep"][-1]["bluffed"] == 2  # o1 and o3 measured


def test_an_edited_marker_never_deletes_a_file_outside_what_eval_writes(tmp_path, stand_in):
    docs, questions, out = write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl"), tmp_path / "out"
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--out", str(out)]) == 0
    (tmp_path / "victim.txt").write_text("mine", encoding="utf-8")
    (out / "notes.md").write_text("mine too", encoding="utf-8")
    marker = json.loads((out / report.MARKER).read_text(encoding="utf-8"))
    marker["files"] += ["../victim.txt", str(tmp_path / "victim.txt"), "notes.md", "../docs"]
    (out / report.MARKER).write_text(json.dumps(marker), encoding="utf-8")
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--out", str(out)]) == 0
    assert (tmp_path / "victim.txt").read_text(encoding="utf-8") == "mine"
    assert (out / "notes.md").read_text(encoding="utf-8") == "mine too" and (docs / "rope.rst").is_file()


def test_a_megabyte_question_is_measured_and_shown_short(tmp_path, stand_in, capsys):
    from ragcourse.cli import folder

    docs, out = write_folder(tmp_path / "docs"), tmp_path / "out"
    huge = "zzz " * 250_000
    questions = write_questions(tmp_path / "q.jsonl", QUESTIONS[:2] + [
        {"id": "huge", "needle": QUESTIONS[2]["needle"], "question": huge},
        {"id": "lost", "needle": huge, "question": "Where is it?"}])
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--k", "1",
                 "--out", str(out)]) == 1
    printed = capsys.readouterr()
    assert "q.jsonl:4: lost: needle not found in the corpus" in printed.err and len(printed.err) < 2000
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "huge/doc" in page and len(page) < 500_000  # the page shows the question's start; the JSON and CSV all
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert results["questions"]["measured"] == 3
    assert len(results["questions"]["rejected"][0]["reason"]) <= folder.REASON_CHARS


def test_chunk_and_needles_name_what_they_could_not_read(tmp_path, capsys):
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder" / "empty.md").write_bytes(b"")
    assert main(["chunk", str(tmp_path / "folder")]) == 2
    assert capsys.readouterr().err == f"ragcourse chunk: error: {tmp_path / 'folder'}: a folder, not a file\n"
    assert main(["needles", str(tmp_path / "folder")]) == 2
    err = capsys.readouterr().err
    assert "no readable documents in" in err and "empty.md: empty file (0 bytes)" in err


def test_one_measurable_question_is_refused_before_any_work(tmp_path, no_work, capsys):
    docs, questions = write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl", QUESTIONS[:1])
    assert main(["eval", str(docs), "--questions", str(questions), "--out", str(tmp_path / "out")]) == 2
    assert "1 question of" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_a_cache_that_cannot_be_written_is_refused_before_any_work(tmp_path, no_work, capsys):
    docs, questions = write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl")
    (tmp_path / "a-file").write_text("not a folder", encoding="utf-8")
    assert main(["eval", str(docs), "--questions", str(questions), "--cache-dir", str(tmp_path / "a-file" / "cache"),
                 "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "cannot be written" in err and "--cache-dir DIR or the environment variable RAGCOURSE_CACHE" in err
    assert not (tmp_path / "out").exists()
    assert main(["index", str(docs), "--out", str(tmp_path / "idx"), "--cache-dir", str(tmp_path / "a-file")]) == 2
    assert "cannot be written" in capsys.readouterr().err


def test_question_ids_with_spaces_keep_the_trec_files_six_and_four_columns(tmp_path, stand_in):
    docs, out = write_folder(tmp_path / "docs"), tmp_path / "out"
    rows = [{**q, "id": f"my question {i}\n"} for i, q in enumerate(QUESTIONS)]
    questions = write_questions(tmp_path / "q.jsonl", rows)
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--out", str(out)]) == 0
    run = [line.split(" ") for line in (out / "run-E-bm25.trec").read_text(encoding="utf-8").splitlines()]
    qrels = [line.split(" ") for line in (out / "qrels-E.trec").read_text(encoding="utf-8").splitlines()]
    assert {len(p) for p in run} == {6} and {len(p) for p in qrels} == {4}
    assert {p[0] for p in qrels} == {report.trec_id(f"my question {i}\n/{ph}") for i in range(5) for ph in
                                     ("doc", "ticket")}


def test_a_doc_written_by_hand_as_a_relative_path_is_found(tmp_path, stand_in):
    docs, out = write_folder(tmp_path / "docs"), tmp_path / "out"
    rows = [{**q, "doc": d} for q, d in zip(QUESTIONS, ["./rope.rst", "rope.rst", ".\\tents.rst", "stoves.rst",
                                                        "stoves.rst"], strict=True)]
    questions = write_questions(tmp_path / "q.jsonl", rows)
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert [d["doc"] for d in results["runs"][0]["per_query"][::2]] == [
        "rope.rst", "rope.rst", "tents.rst", "stoves.rst", "stoves.rst"]


def test_max_bytes_sets_the_size_limit_and_the_terminal_says_so(tmp_path, stand_in, capsys):
    docs, questions, out = write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl"), tmp_path / "out"
    (docs / "big.md").write_text("# Big\n\n" + "Filler words for a large page. " * 100, encoding="utf-8")
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--max-bytes", "1000",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    hint = "  (a larger file is read with --max-bytes N)"
    assert "  FAILED big.md: too large: 3107 bytes > limit of 1000 bytes\n" + hint in printed
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--out", str(out)]) == 0
    assert "FAILED" not in capsys.readouterr().out


def test_thousands_of_bad_lines_are_counted_not_flooded(tmp_path, stand_in, capsys):
    docs, out, path = write_folder(tmp_path / "docs"), tmp_path / "out", tmp_path / "q.jsonl"
    path.write_text(GOOD + "not json\n" * 5000, encoding="utf-8")
    assert main(["eval", str(docs), "--questions", str(path), "--methods", "bm25", "--out", str(out)]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 21 and err[-1].startswith("ragcourse eval: ... and 4980 more line(s) left out")
    assert len(json.loads((out / "results.json").read_text(encoding="utf-8"))["questions"]["rejected"]) == 5000
    page = (out / "report.html").read_text(encoding="utf-8")
    section = page.split("id='left-out'")[1].split("<h2")[0]
    assert "5000 line(s)" in section and "the first 100 are listed" in section and section.count("</tr>") == 101


def test_a_questions_file_whose_name_is_not_utf8_still_gets_its_report(tmp_path, stand_in):
    """The left-out line's `file:line` held a lone surrogate, and writing results.json failed after all the work."""
    docs, out = write_folder(tmp_path / "docs"), tmp_path / "out"
    name = os.path.join(os.fsencode(tmp_path), b"q\xe9.jsonl")
    with open(name, "wb") as handle:
        handle.write(GOOD.encode() + b"not json\n")
    assert main(["eval", str(docs), "--questions", os.fsdecode(name), "--methods", "bm25", "--out", str(out)]) == 1
    rejected = json.loads((out / "results.json").read_text(encoding="utf-8"))["questions"]["rejected"]
    assert [r["where"] for r in rejected] == [f"{tmp_path}/q\\xe9.jsonl:4"]


# ---------------------------------------------------------------- every split with its uncertainty


def test_every_pair_and_phrasing_is_tested_with_holm_and_the_report_opens_on_a_verdict(tmp_path, stand_in):
    from ragcourse.evaluation import holm, per_question, sign_test

    docs, questions, out = write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl"), tmp_path / "out"
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25,dense,hybrid", "--k", "1,2",
                 "--out", str(out)]) == 0
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    splits = results["splits"]
    assert len(splits) == 3 * 3 * 3  # 3 pairs x (all, doc, ticket) x (R@1, R@2, MRR)
    ranks = {r["label"]: {d["query"]: d["rank"] for d in r["per_query"]} for r in results["runs"]}
    for e in splits:  # recomputed from the per-query ranks, by hand
        keep = [q for q in ranks[e["a"]] if e["split"] == "all" or q.endswith("/" + e["split"])]
        value = (lambda r: 1 / r) if e["metric"] == "MRR" else (lambda r, k=int(e["metric"][2:]): float(r <= k))
        table = pd.DataFrame({"query": keep, "a": [value(ranks[e["a"]][q]) for q in keep],
                              "b": [value(ranks[e["b"]][q]) for q in keep]})
        diffs = per_question(table, "a") - per_question(table, "b")
        assert e["difference"] == round(diffs.mean(), 3) >= 0  # A is the run with the higher mean
        assert (e["wins"], e["losses"]) == (int((diffs > 0).sum()), int((diffs < 0).sum()))
        assert e["p"] == round(sign_test(e["wins"], e["losses"]), 4)
        assert e["low"] <= e["difference"] <= e["high"]
        family = [x for x in splits if (x["split"], x["metric"]) == (e["split"], e["metric"])]
        assert e["p_holm"] == round(holm([x["p"] for x in family])[family.index(e)], 4)
    for run in results["runs"]:
        for figures in run["by_phrasing"].values():
            for k, (low, high) in figures["recall_interval"].items():
                assert low <= figures["recall"][k] <= high
    assert {h["metric"] for h in results["heterogeneity"]} == {"R@2", "MRR"} and len(results["heterogeneity"]) == 6
    page = (out / "report.html").read_text(encoding="utf-8")
    verdict = page.split("<div id='verdict' class='verdict'>")[1].split("</div>")[0]
    assert page.index("id='verdict'") < page.index("id='runs'") < page.index("id='splits'") < page.index("id='files'")
    for split in ("Over all questions: ", "Asked as the documentation would: ", "Asked as tickets: "):
        assert split in verdict
    assert "pick " in verdict or "cannot decide" in verdict


# ---------------------------------------------------------------- bring your own retriever


def test_a_run_file_is_scored_like_any_run_and_ir_measures_agrees(tmp_path, stand_in, capsys):
    import ir_measures

    docs, questions, out = write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl"), tmp_path / "out"
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--out", str(out)]) == 0
    bm25 = [line.split() for line in (out / "run-E-bm25.trec").read_text(encoding="utf-8").splitlines()]
    by_query = {}
    for qid, _, docno, *_ in bm25:
        by_query.setdefault(qid, []).append(docno)
    mine = tmp_path / "mine.trec"  # another system: BM25's ranking reversed, scores falling
    mine.write_text("".join(f"{qid} Q0 {d} {r} {100 - r} mine\n" for qid, ids in by_query.items()
                            for r, d in enumerate(reversed(ids), 1)), encoding="utf-8")
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--k", "1,2,4",
                 "--run", str(mine), "--out", str(tmp_path / "out2")]) == 0
    results = json.loads((tmp_path / "out2" / "results.json").read_text(encoding="utf-8"))
    run = next(r for r in results["runs"] if r["label"] == "run/mine")
    qrels = list(ir_measures.read_trec_qrels(str(tmp_path / "out2" / "qrels-E.trec")))
    expected = ir_measures.calc_aggregate([ir_measures.R @ 1, ir_measures.R @ 2, ir_measures.R @ 4,
                                           ir_measures.RR], qrels, list(ir_measures.read_trec_run(str(mine))))
    assert run["recall"] == {str(k): round(expected[ir_measures.R @ k], 3) for k in (1, 2, 4)}
    assert run["mrr"] == round(expected[ir_measures.RR], 3)
    assert run["latency_ms"] is None and {e["a"] for e in results["splits"]} | {e["b"] for e in
                                                                                results["splits"]} == {
        "E/bm25", "run/mine"}  # tested against the built-in run, with the same intervals
    assert run["recall_interval"] and run["doc_recall"]


def test_a_run_file_names_passages_by_offsets_and_each_bad_line_costs_only_itself(tmp_path, stand_in, capsys):
    docs, questions, out = write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl"), tmp_path / "out"
    needle = QUESTIONS[0]["needle"]
    start = (docs / "rope.rst").read_text(encoding="utf-8").index("Coil")  # offsets into the text as read
    from ragcourse.documents import read_document

    text = read_document(docs / "rope.rst", "rope.rst").text
    at = text.index(needle)
    mine = tmp_path / "mine.trec"
    mine.write_text(f"knot/doc Q0 rope.rst#char={at},{at + len(needle)} 1 9.5 x\n"
                    f"knot/doc Q0 rope.rst#char={start},{start + 4} 2 3 x\n"
                    "knot/doc Q0 nowhere.md#0 3 2 x\n"
                    "knot/doc Q0 rope.rst#char=5,999999 4 1 x\n"
                    "knot/ticket Q0 rope.rst#0 one 1 x\n"
                    "ghost/doc Q0 rope.rst#0 1 1 x\n", encoding="utf-8")
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--run", str(mine),
                 "--out", str(out)]) == 1
    err = capsys.readouterr().err
    for line, why in ((3, "unknown chunk or document id 'nowhere.md#0'"), (4, "offsets outside the document"),
                      (5, "expected an integer and a number"), (6, "query 'ghost/doc' is not one of the questions")):
        assert f"left out {mine}:{line}: " in err and why in err
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    ranks = {d["query"]: d["rank"] for d in next(r for r in results["runs"] if r["label"] == "run/mine")["per_query"]}
    assert ranks["knot/doc"] == 1 and ranks["knot/ticket"] is None  # a query the file does not rank ranks nothing


def test_exclude_globs_leave_paths_unread_and_listed(tmp_path, stand_in, capsys):
    docs, questions, out = write_folder(tmp_path / "docs"), write_questions(tmp_path / "q.jsonl"), tmp_path / "out"
    (docs / "_build" / "html").mkdir(parents=True)
    (docs / "_build" / "html" / "rope.html").write_text("<p>" + QUESTIONS[0]["needle"] + "</p>", encoding="utf-8")
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--out", str(out)]) == 1
    assert "needle occurs 2 times" in capsys.readouterr().err  # the built copy makes the needle ambiguous
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--exclude", "_build",
                 "--exclude", "*.png", "--out", str(out)]) == 0
    corpus = json.loads((out / "results.json").read_text(encoding="utf-8"))["corpus"]
    assert corpus["excluded"] == ["_build/html/rope.html", "diagram.png"] and corpus["skipped"] == []
    assert corpus["documents"] == 3 and "2 excluded by --exclude" in (out / "report.html").read_text()


def test_every_table_of_the_report_fits_1280_px_in_a_browser(tmp_path, stand_in):
    """Long unbroken file names, long questions and three runs: no table is wider than its box at 1280 px,
    and the verdict and the runs come before the files not read."""
    from browser import load_page

    docs = write_folder(tmp_path / "docs")
    deep = docs / ("a_rather_long_folder_name_without_any_spaces_" * 2) / "and_another_one_below_it"
    deep.mkdir(parents=True)
    (deep / ("storage_and_maintenance_of_climbing_ropes_" * 2 + ".rst")).write_text(
        ROPE.replace("Rope handling\n=============", "Rope care\n=========").replace("A figure eight", "One eight")
        .replace("Dry the rope", "Air the rope").replace("Coil the", "Loop the"), encoding="utf-8")
    for i in range(30):
        (docs / f"broken-{i:02d}.pdf").write_text("not a PDF\n", encoding="utf-8")
    rows = [{**q, "ticket": q["ticket"] + " " + "and_a_very_long_unbroken_token_pasted_from_a_log_" * 3}
            for q in QUESTIONS]
    questions, out = write_questions(tmp_path / "q.jsonl", rows), tmp_path / "out"
    assert main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25,dense,hybrid", "--k", "1,2",
                 "--out", str(out)]) == 0
    page = load_page(out / "report.html", width=1280)
    assert "and_a_very_long_unbroken_token" in page.text.split("Missed questions")[1]  # the missed table has rows
    assert page.wide_tables == ()
    text = page.text
    assert text.index("Over all questions") < text.index("Runs") < text.index("Missed questions") \
        < text.rindex("30 file(s) failed to read")
