"""`ragcourse eval` and `ragcourse needles` on folders made here: mixed good and broken files, bad input.

Every document below is written for the test (no third-party text). The slow end-to-end runs use
the offline embedder with a vector cache under tmp_path, so the shared cache is never touched.
"""

from __future__ import annotations

import base64
import json
import re
import warnings

import numpy as np
import pytest

from ragcourse import dense, documents
from ragcourse.cli import folder, main, report
from ragcourse.cli import runs as runs_module
from ragcourse.cli.folder import load_folder_questions, read_folder
from ragcourse.cli.runs import without_latency
from ragcourse.corpus import Document
from ragcourse.documents import ExtractionError, read_document
from ragcourse.groundtruth import GroundTruthError
from ragcourse.paths import CACHE_ROOT

GUIDE = """# Camping guide

A short guide to camping in the hills, written for the tests of this course.

## Tents

Pitch the tent on flat ground, away from dry stream beds.
A tent with a porch keeps wet boots out of the sleeping area.
Guy lines should be tightened again after the first hour of rain.

## Stoves

A gas stove needs a wind shield on exposed ridges.
Never cook inside the inner tent, because carbon monoxide gathers there.
Spare canisters are kept upright in the shade during the day.
"""

NOTES = ("Water notes\r\n\r\nFilter every litre taken from a lake before drinking it.\r\n"
         "Boiling water for one full minute kills most pathogens.\r\n\r\n"
         "Carry two bottles so that one can settle while the other is used.\r\n")

MANUAL = """Rope handling
=============

Coil the rope in loops of equal length so it pays out without tangles.

A figure eight knot at each end stops the rope sliding through a belay device.
"""

PAGE = """<!DOCTYPE html><html><head><title>Trail food</title>
<script src="https://example.invalid/tracker.js"></script><style>p{color:red}</style></head>
<body><h1>Trail food</h1><p>Oats with powdered milk make a breakfast that needs only hot water.</p>
<h2>Snacks</h2><p>Salted nuts replace the salt lost by sweating on long climbs.</p>
<ul><li>Dried apricots keep for weeks in a sealed bag.</li></ul></body></html>
"""

PDF_LINES = ("Map reading", "A contour line joins points of equal height above sea level.",
             "Closely spaced contours mean a steep slope ahead.")


def pdf_bytes(lines: tuple[str, ...]) -> bytes:
    """A minimal one-page PDF (Helvetica, one line of text per entry), written by hand."""
    ops = "BT /F1 12 Tf 72 720 Td 16 TL " + " ".join(f"({ln}) Tj T*" for ln in lines) + " ET"
    objects = ["<< /Type /Catalog /Pages 2 0 R >>", "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> "
               "/Contents 5 0 R >>", "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
               f"<< /Length {len(ops)} >>\nstream\n{ops}\nendstream"]
    out, offsets = b"%PDF-1.4\n", []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n{body}\nendobj\n".encode("latin-1")
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{o:010d} 00000 n \n".encode() for o in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return out


def make_folder(root):
    """Five good files (md, txt with BOM+CRLF, rst, html, pdf) and five broken ones, in subfolders."""
    (root / "sub" / "deeper").mkdir(parents=True)
    (root / "guide.md").write_text(GUIDE, encoding="utf-8")
    (root / "sub" / "notes.txt").write_bytes(b"\xef\xbb\xbf" + NOTES.encode("utf-8"))
    (root / "sub" / "manual.rst").write_text(MANUAL, encoding="utf-8")
    (root / "sub" / "deeper" / "page.html").write_text(PAGE, encoding="utf-8")
    (root / "maps.pdf").write_bytes(pdf_bytes(PDF_LINES))
    (root / "latin1.md").write_bytes("Caf\xe9 menu, written in Latin-1.\n".encode("latin-1"))
    (root / "empty.txt").write_bytes(b"")
    (root / "picture.md").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    (root / "table.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (root / "locked.md").write_text("You may not read this file.\n", encoding="utf-8")
    (root / "fake.pdf").write_text("not really a PDF\n", encoding="utf-8")
    return root


EXPECTED_FAILED = {
    "empty.txt": "empty file (0 bytes)",
    "fake.pdf": "not a PDF",
    "latin1.md": "undecodable: not UTF-8, byte 0xe9 at offset 3",
    "locked.md": "unreadable: Permission denied",
    "picture.md": "binary content (PNG image)",
}
NOT_DOCUMENTS = ["table.csv"]  # skipped quietly: counted and listed, never FAILED


@pytest.fixture
def denied(monkeypatch):
    """Tests run as root, where chmod 000 does not stop a read: simulate the denied read instead."""
    real = documents._read_bytes

    def read(path):
        if path.name == "locked.md":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(documents, "_read_bytes", read)


@pytest.fixture
def docs(tmp_path, denied):
    root = make_folder(tmp_path / "docs")
    (root / "locked.md").chmod(0)
    return root


def test_every_file_is_read_or_listed_as_failed_with_its_reason(docs):
    corpus = read_folder(docs)
    ids = [d.id for d in corpus.documents]
    assert ids == ["guide.md", "maps.pdf", "sub/deeper/page.html", "sub/manual.rst", "sub/notes.txt"]
    failed = {f.path: f.reason for f in corpus.failed}
    assert sorted(failed) == sorted(EXPECTED_FAILED)
    for path, reason in EXPECTED_FAILED.items():
        assert failed[path].startswith(reason), (path, failed[path])
    assert list(corpus.skipped) == NOT_DOCUMENTS
    assert len(ids) + len(failed) + len(corpus.skipped) == sum(1 for p in docs.rglob("*") if p.is_file())


def test_titles_come_from_the_first_heading_or_the_file_name(docs):
    by_id = {d.id: d for d in read_folder(docs).documents}
    assert by_id["guide.md"].title == "Camping guide"
    assert by_id["guide.md"].text == GUIDE.split("\n", 2)[2]  # the title line left the text
    assert by_id["sub/manual.rst"].title == "Rope handling"
    assert by_id["sub/deeper/page.html"].title == "Trail food"
    assert by_id["sub/notes.txt"].title == "notes.txt"  # plain text has no heading
    assert by_id["maps.pdf"].title == "maps.pdf"  # no title in its metadata
    assert not by_id["sub/notes.txt"].text.startswith("\ufeff")


def test_html_keeps_its_text_and_sections_and_drops_scripts(docs):
    page = read_document(docs / "sub/deeper/page.html", "page.html")
    assert "## Snacks" in page.text.split("\n")
    assert "Dried apricots keep for weeks in a sealed bag." in page.text
    assert "tracker" not in page.text and "color:red" not in page.text


def test_pdf_text_is_extracted(docs):
    pdf = read_document(docs / "maps.pdf", "maps.pdf")
    assert "Closely spaced contours mean a steep slope ahead." in pdf.text


def test_a_file_over_the_limit_is_listed_as_too_large(tmp_path):
    (tmp_path / "big.md").write_text("word " * 100, encoding="utf-8")
    corpus = read_folder(tmp_path, max_bytes=100)
    assert [(f.path, f.reason) for f in corpus.failed] == [("big.md", "too large: 500 bytes > limit of 100 bytes")]
    (tmp_path / "x.docx").write_bytes(b"PK\x03\x04")
    with pytest.raises(ExtractionError, match="not a document: unsupported type '.docx'"):
        read_document(tmp_path / "x.docx", "x.docx")


def questions_text(crlf=False, bom=False):
    rows = [
        {"id": "tents", "needle": "Pitch the tent on flat ground, away from dry stream beds.",
         "question": "Where should a tent be pitched?", "ticket": "my tent flooded last night, where did I go wrong",
         "doc": "guide.md"},
        {"id": "stove", "needle": "Never cook inside the inner tent, because carbon monoxide gathers there.",
         "question": "Why not cook inside the tent?"},
        {"id": "water", "needle": "Boiling water for one full minute kills most pathogens.",
         "question": "How long must water boil to be safe?", "ticket": "is a quick boil enough for lake water"},
        {"id": "knot", "needle": "A figure eight knot at each end stops the rope sliding through a belay device.",
         "question": "Which knot stops the rope end sliding through a belay device?", "doc": "sub/manual.rst"},
        {"id": "snack", "needle": "Salted nuts replace the salt lost by sweating on long climbs.",
         "question": "What snack replaces salt lost by sweating?"},
        {"id": "contour", "needle": "Closely spaced contours mean a steep slope ahead.",
         "question": "What do closely spaced contour lines mean?", "ticket": "map lines squeezed together??"},
    ]
    text = ("\r\n" if crlf else "\n").join(json.dumps(r) for r in rows) + "\n"
    return ("\ufeff" if bom else "") + text


def test_questions_with_bom_and_crlf_are_accepted(docs, tmp_path):
    documents = read_folder(docs).documents
    plain, odd = tmp_path / "plain.jsonl", tmp_path / "odd.jsonl"
    plain.write_text(questions_text(), encoding="utf-8")
    odd.write_bytes(questions_text(crlf=True, bom=True).encode("utf-8"))
    first, second = load_folder_questions(plain, documents), load_folder_questions(odd, documents)
    assert first == second
    assert [q.doc for q in first] == ["guide.md", "guide.md", "sub/notes.txt", "sub/manual.rst",
                                     "sub/deeper/page.html", "maps.pdf"]  # `doc` found when not given
    assert [q.ticket for q in first][:2] == ["my tent flooded last night, where did I go wrong", ""]


@pytest.mark.parametrize(("record", "reason"), [
    ({"id": "x", "needle": "This sentence is nowhere.", "question": "?"}, "needle not found in the corpus"),
    ({"id": "x", "needle": "tent", "question": "?"}, "needle occurs"),
    ({"id": "x", "needle": "Snacks", "question": "?"}, "needle is (part of) a section heading"),
    ({"id": "x", "needle": "Boiling water for one full minute kills most pathogens.", "question": "?",
      "doc": "guide.md"}, "needle is in 'sub/notes.txt', not in 'guide.md'"),
    ({"id": "x", "needle": "Boiling water for one full minute kills most pathogens.", "question": "?",
      "doc": "nowhere.md"}, "unknown document 'nowhere.md'"),
    ({"id": "x", "needle": "Boiling water", "question": "?", "answer": "y"}, "unexpected ['answer']"),
    ({"id": "x", "question": "?"}, "missing ['needle']"),
])
def test_a_bad_question_names_its_line_and_reason(docs, tmp_path, record, reason):
    """Strictly (`load_folder_questions`) the line is an error; `eval` leaves it out (test_eval_outputs.py)."""
    path = tmp_path / "q.jsonl"
    path.write_text(questions_text() + "\n" + json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(GroundTruthError) as err:
        load_folder_questions(path, read_folder(docs).documents)
    assert f"{path}:8: " in str(err.value) and reason in str(err.value)


def test_needles_are_unique_and_never_headings(docs, capsys):
    assert main(["needles", str(docs), "--n", "5"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert len(records) == 5
    documents = read_folder(docs).documents
    for r in records:  # each one passes the same validation as a question
        q = folder.Question(r["id"], r["doc"], r["needle"], "q", "")
        folder.check_needle(q, list(documents))
    assert len({r["doc"] for r in records}) >= 3  # spread over the folder, not all from one file


def test_needles_are_whole_sentences():
    text = "# T\n\nIt is licensed under the Apache License (Version 2.0), like most of the code here.\n\n" \
           "Each release is signed with the project's key and listed on the download page.\n"
    needles = [s for _, s in folder.candidate_needles([Document("d", "T", text)], n=5)]
    assert needles == ["Each release is signed with the project's key and listed on the download page."]


def test_bad_lists_and_missing_folders_exit_2(tmp_path, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["eval", str(tmp_path), "--questions", "q.jsonl", "--out", "o", "--strategies", "E,Z"])
    assert stop.value.code == 2
    expected = "strategies='E,Z': expected a comma-separated list of ['A', 'B', 'C', 'D', 'E', 'F']"
    assert expected in capsys.readouterr().err
    assert main(["eval", str(tmp_path / "absent"), "--questions", "q.jsonl", "--out", "o"]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert main(["eval", str(tmp_path), "--questions", "q.jsonl", "--out", "o"]) == 2
    assert "no readable documents" in capsys.readouterr().err


def test_help_is_in_the_usual_form(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["eval", "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: ragcourse eval [-h] --questions QUESTIONS.jsonl")
    for option in ("--out-of-domain OOD.jsonl", "--strategies", "--methods", "--rerank", "--out OUTDIR",
                   "--k K,K,...", "--baseline RUN", "--cache-dir DIR"):
        assert option in out
    assert "$RAGCOURSE_CACHE, else your user cache folder" in " ".join(out.split())  # where the cache goes


# ---------------------------------------------------------------- cache corruption


class CountingModel:
    """A stand-in sentence-transformers model: 8-dim unit vectors from a hash of the text, counted."""

    def __init__(self):
        self.encoded = 0

    def get_embedding_dimension(self):
        return 8

    def encode(self, texts, **kwargs):
        self.encoded += len(texts)
        rows = [np.frombuffer(dense.text_key(t).encode()[:32], dtype=np.uint8)[:8].astype(np.float32) + 1
                for t in texts]
        return np.stack([r / np.linalg.norm(r) for r in rows])


@pytest.mark.parametrize("damage", [b"", b"PK\x03\x04 truncated zip", b"\x00" * 64, "wrong-dim"])
def test_a_corrupt_cache_file_is_rebuilt_with_a_warning_never_used(tmp_path, damage):
    model = CountingModel()
    embedder = dense.Embedder(model=model, name="m", fingerprint="f", cache_dir=tmp_path)
    texts = ["alpha", "beta", "gamma"]
    truth = embedder.encode(texts)
    path = tmp_path / "f.npz"
    if damage == "wrong-dim":
        np.savez(path, keys=np.array([dense.text_key(t) for t in texts]), vectors=np.ones((3, 5), np.float32))
    else:
        path.write_bytes(damage)
    with pytest.warns(dense.CacheWarning, match="embedding cache .*f.npz is corrupt"):
        again = embedder.encode(texts)
    assert np.array_equal(again, truth) and embedder.last_stats["embedded"] == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # rebuilt: the next run reads it without a warning and embeds nothing
        assert np.array_equal(embedder.encode(texts), truth)
    assert embedder.last_stats["embedded"] == 0


# ---------------------------------------------------------------- saved indexes that cannot be trusted


@pytest.fixture
def saved_index(tmp_path):
    from ragcourse.index_sync import ingest_folder

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text(GUIDE, encoding="utf-8")
    model = CountingModel()
    built = ingest_folder(tmp_path / "docs", embed=lambda texts: model.encode(texts), model_name="m", dim=8)
    from ragcourse.index_format import save

    return save(built.index, tmp_path / "idx")


@pytest.mark.parametrize(("damage", "why"), [
    (lambda p: (p / "manifest.json").unlink(), "manifest.json is missing"),
    (lambda p: (p / "manifest.json").write_text("{not json", encoding="utf-8"), "manifest.json is not valid"),
    (lambda p: (p / "manifest.json").write_text("[1, 2]", encoding="utf-8"), "expected a JSON object, got list"),
    (lambda p: (p / "manifest.json").write_text(
        (p / "manifest.json").read_text().replace('"format": 1', '"format": 2'), encoding="utf-8"),
     "format 2 was written by another version; this code reads format 1"),
    (lambda p: np.save(p / "v000001/vectors.npy", np.load(p / "v000001/vectors.npy")[:-1]),
     "2 vectors stored for 3 chunks: every chunk needs exactly one"),
])
def test_an_index_that_cannot_be_trusted_is_refused_with_what_to_rebuild(saved_index, damage, why, capsys):
    from ragcourse.index_format import IndexFormatError, load

    assert len(load(saved_index).chunks) == 3  # sound before the damage (preamble, Tents, Stoves)
    damage(saved_index)
    with pytest.raises(IndexFormatError) as err:
        load(saved_index)
    assert why in str(err.value)
    assert f"Rebuild it: `ragcourse index DOCS_DIR --out {saved_index}`" in str(err.value)
    assert main(["query", str(saved_index), "tents"]) == 2
    assert "refused" in capsys.readouterr().err


# ---------------------------------------------------------------- end to end, with the real embedder


def private_cache(monkeypatch, root):
    """A private embedding cache, the late-interaction reranker with no token cache on disk, and a
    record of how many texts each `Embedder.encode` call had to embed."""
    from ragcourse import rerank

    monkeypatch.setattr(dense, "CACHE_DIR", root / "unused")  # eval takes --cache-dir, never the course's cache
    monkeypatch.setattr(rerank, "TOKENS_DIR", root / "unused")
    embedded = []
    real = dense.Embedder.encode

    def counting(self, texts, progress=None):
        vectors = real(self, texts, progress)
        embedded.append(self.last_stats["embedded"])
        return vectors

    monkeypatch.setattr(dense.Embedder, "encode", counting)
    return embedded


OOD = [{"id": "o1", "query": "How do I renew a passport?", "kind": "absurd"},
       {"id": "o2", "query": "Which sleeping bag is warmest below freezing?", "kind": "near"},
       {"id": "o3", "query": "What is the capital of Peru?"}]


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """One end-to-end run on the mixed folder (two strategies, two methods, rerank, a sweep), shared."""
    root = tmp_path_factory.mktemp("eval")
    with pytest.MonkeyPatch.context() as monkeypatch:
        real = documents._read_bytes
        monkeypatch.setattr(documents, "_read_bytes", lambda p: deny(p) if p.name == "locked.md" else real(p))
        docs = make_folder(root / "docs")
        questions, ood = root / "q.jsonl", root / "ood.jsonl"
        questions.write_bytes(questions_text(crlf=True, bom=True).encode("utf-8"))
        ood.write_text("\n".join(json.dumps(o) for o in OOD) + "\n", encoding="utf-8")
        embedded = private_cache(monkeypatch, root)
        argv = ["eval", str(docs), "--questions", str(questions), "--out-of-domain", str(ood),
                "--strategies", "A,E", "--methods", "dense,hybrid", "--rerank", "--cache-dir", str(root / "cache"),
                "--out", str(root / "out")]
        assert main(argv) == 0
        first = list(embedded)
        embedded.clear()
        again = argv[:-1] + [str(root / "again")]
        assert main(again) == 0
        yield argv, root, first, list(embedded)


def deny(path):
    raise PermissionError(13, "Permission denied", str(path))


def test_eval_writes_results_json_as_specified(evaluated):
    out = evaluated[1] / "out"
    results = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert list(results) == ["corpus", "questions", "ks", "runs", "paired", "splits", "heterogeneity", "sweep"]
    assert results["questions"] == {"measured": 6, "rejected": []}
    assert results["ks"] == [1, 4, 8, 20]
    corpus = results["corpus"]
    assert list(corpus) == ["documents", "characters", "sections", "failed", "no_text", "skipped", "kept_as_text",
                            "excluded"]
    assert corpus["documents"] == 5 and corpus["sections"] == 3  # Tents, Stoves (md); Snacks (html)
    assert {f["path"] for f in corpus["failed"]} == set(EXPECTED_FAILED) - {"empty.txt"}
    assert corpus["no_text"] == [{"path": "empty.txt", "reason": "empty file (0 bytes)"}]  # apart from failures
    assert corpus["kept_as_text"] == []
    assert corpus["skipped"] == NOT_DOCUMENTS
    runs = results["runs"]
    assert [(r["strategy"], r["method"], r["rerank"]) for r in runs] == [
        (s, m, r) for s in "AE" for m in ("dense", "hybrid") for r in (False, True)]
    for run in runs:
        assert list(run) == ["strategy", "method", "rerank", "label", "queries", "recall", "ndcg", "mrr",
                             "doc_recall", "recall_interval", "doc_recall_interval", "by_phrasing", "latency_ms",
                             "answers_destroyed", "per_query"]
        assert all(run["doc_recall"][k] >= run["recall"][k] for k in run["recall"])  # a chunk hit is a doc hit
        assert [d["query"] for d in run["per_query"]] == [
            "tents/doc", "tents/ticket", "stove/doc", "water/doc", "water/ticket", "knot/doc", "snack/doc",
            "contour/doc", "contour/ticket"]
        assert run["by_phrasing"]["doc"]["queries"] == 6 and run["by_phrasing"]["ticket"]["queries"] == 3
        assert run["queries"] == 9  # 6 questions, 3 of them with a ticket
        assert list(run["recall"]) == list(run["recall_interval"]) == ["1", "4", "8", "20"]
        values = [run["recall"][k] for k in ("1", "4", "8", "20")]
        assert values == sorted(values) and all(0 <= v <= 1 for v in values)
        for k, (low, high) in run["recall_interval"].items():
            assert 0 <= low <= run["recall"][k] <= high <= 1  # a share's interval, clipped to [0, 1]
        assert all(v == round(v, 3) for v in [*values, run["mrr"]])
    assert runs[0]["answers_destroyed"] == runs[1]["answers_destroyed"]  # same chunks, same strategy
    # each run against the first, and A/hybrid+rerank, E/dense+rerank, E/hybrid+rerank against their first stage
    assert len(results["paired"]) == (len(runs) - 1 + 3) * 5
    pairs = {(p["label"], p["against"]["label"]) for p in results["paired"]}
    assert {(r["label"], "A/dense") for r in runs[1:]} | {
        ("A/hybrid+rerank", "A/hybrid"), ("E/dense+rerank", "E/dense"), ("E/hybrid+rerank", "E/hybrid")} == pairs
    for p in results["paired"]:
        assert p["wins"] + p["losses"] <= 6 and 0 <= p["p"] <= 1  # over 6 questions
    sweep = results["sweep"]
    assert len(sweep) == 4 * len(runs_module.CUTS)  # A and E, dense and hybrid; reranked runs have no sweep
    last = [row for row in sweep if row["cut"] is None]
    assert all(row["bluffed"] == 3 and row["ood_refused"] == 0 for row in last)  # no threshold: every one bluffs


def test_eval_recall_equals_the_package_computed_directly(evaluated):
    """The JSON's numbers are the package's own: recompute strategy E dense by hand."""
    from ragcourse import pipeline
    from ragcourse.cli.folder import folder_queries
    from ragcourse.evaluation import evaluate

    argv, root, _, _ = evaluated
    out = root / "out"
    # without the simulated denial locked.md reads here; the run under test had it as a failure
    documents = [d for d in read_folder(argv[1]).documents if d.id != "locked.md"]
    qs = folder_queries(load_folder_questions(argv[3], documents))
    embedder = dense.load_embedder(root / "cache")
    retriever = pipeline.build("E", corpus=documents, embedder=embedder)
    per_query = evaluate(retriever.rankings(qs, "dense"), qs)
    run = next(r for r in json.loads((out / "results.json").read_text())["runs"]
               if (r["strategy"], r["method"], r["rerank"]) == ("E", "dense", False))
    assert run["recall"] == {str(k): round(float(per_query[f"hit@{k}"].mean()), 3) for k in (1, 4, 8, 20)}
    assert run["mrr"] == round(float(per_query["rr"].mean()), 3)


def test_a_second_run_embeds_nothing_and_gives_the_same_json(evaluated):
    _, root, first, second = evaluated
    assert sum(first) > 0
    assert second and sum(second) == 0  # every chunk vector came from the shared cache
    again, out = (json.loads((root / name / "results.json").read_text()) for name in ("again", "out"))
    assert without_latency(again) == without_latency(out)
    assert (root / "cache" / "embeddings").is_dir()  # the cache went where --cache-dir said
    assert list((root / "cache" / "tokens").glob("*.npz"))  # the reranker's token vectors are cached too


def test_a_second_run_without_rerank_never_loads_the_model(evaluated, monkeypatch):
    """Chunk and query vectors all come from the cache, so the model (and torch) is not even loaded."""
    from ragcourse import models

    argv, root, _, _ = evaluated
    monkeypatch.setattr(models, "load_embedder", lambda: pytest.fail("the embedder was loaded"))
    assert main(argv[:4] + ["--strategies", "A,E", "--methods", "dense,hybrid", "--cache-dir", str(root / "cache"),
                            "--out", str(root / "warm")]) == 0
    runs = without_latency(json.loads((root / "warm" / "results.json").read_text()))["runs"]
    first = [r for r in without_latency(json.loads((root / "out" / "results.json").read_text()))["runs"]
             if not r["rerank"]]
    assert runs == first


def test_report_html_is_self_contained(evaluated):
    out = evaluated[1] / "out"
    page = (out / "report.html").read_text(encoding="utf-8")
    for section in ("corpus", "runs", "phrasing", "missed", "recall", "paired", "destroyed", "sweep"):
        assert f"id='{section}'" in page
    assert "latin1.md" in page and "Permission denied" in page  # failures are listed
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", page), "a reference to another host"
    images = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == 2  # recall@k and the sweep
    for data in images:
        assert base64.b64decode(data).startswith(b"\x89PNG\r\n\x1a\n")


def test_report_renders_in_a_real_browser_with_no_outside_request(evaluated, tmp_path):
    from browser import load_page

    out = evaluated[1] / "out"
    page = load_page(out / "report.html", tmp_path / "shot.png")
    assert (out / "report.html").as_uri() in page.requests  # the browser did load it
    assert page.outside_requests == (), page.outside_requests
    assert page.images == 2 and page.broken_images == 0  # both plots decoded and drawn
    assert "Threshold sweep" in page.text and "Files" in page.text and "documents, " in page.text
    assert page.wide_tables == ()  # every table readable at 1280 px


# ---------------------------------------------------------------- the book's own corpus, as files


def glued(notebook: str) -> dict[str, float]:
    """The numbers a committed notebook glued (myst-nb's scrapbook outputs), by name."""
    from pathlib import Path

    cells = json.loads((Path(__file__).parents[1] / "notebooks" / notebook).read_text(encoding="utf-8"))["cells"]
    found = {}
    for cell in cells:
        for output in cell.get("outputs", []):
            name = output.get("metadata", {}).get("scrapbook", {}).get("name")
            value = output.get("data", {}).get("application/papermill.record/text/plain")
            if name and value is not None and re.fullmatch(r"-?\d+\.\d+", value):
                found[name] = float(value)
    return found


@pytest.fixture(scope="module")
def book_runs(tmp_path_factory, corpus):
    """`eval` on the course corpus exported as files, with the book's questions: all 210, then the original 32.

    Pinned difference of the file form: a document's id is its file name (`user-config.md`, not
    `user-config`), so the questions' `doc` gains ".md". Titles and texts read back exactly (tested).
    """
    from ragcourse.cli.folder import export_corpus
    from ragcourse.groundtruth import load_questions

    root = tmp_path_factory.mktemp("book")
    export_corpus(corpus, root / "docs")
    out = {}
    for subset in ("all", "original"):
        path = root / f"{subset}.jsonl"
        path.write_text("".join(json.dumps({"id": q.id, "doc": f"{q.doc}.md", "needle": q.needle,
                                            "question": q.question, "ticket": q.ticket}) + "\n"
                                for q in load_questions(corpus=corpus, subset=subset)), encoding="utf-8")
        assert main(["eval", str(root / "docs"), "--questions", str(path), "--strategies", "E",
                     "--methods", "dense,bm25,hybrid", "--cache-dir", str(CACHE_ROOT),  # the chapters' vectors
                     "--out", str(root / subset)]) == 0
        runs = json.loads((root / subset / "results.json").read_text(encoding="utf-8"))["runs"]
        out[subset] = {r["method"]: r for r in runs}
    return root, out


def test_the_exported_corpus_reads_back_exactly(book_runs, corpus):
    back = read_folder(book_runs[0] / "docs")
    assert back.failed == ()
    assert [d.id for d in back.documents] == [f"{d.id}.md" for d in corpus]  # the pinned difference
    assert [(d.title, d.text) for d in back.documents] == [(d.title, d.text) for d in corpus]


@pytest.mark.parametrize("subset", ["all", "original"])
def test_strategy_e_equals_chapters_3_and_4(book_runs, subset):
    """Every recall@k and MRR of E equals what chapter 3 (dense) and chapter 4 (BM25, hybrid) glued."""
    three, four = glued("labs/03-dense-retrieval.ipynb"), glued("labs/04-bm25-hybrid.ipynb")  # their labs
    runs = book_runs[1][subset]
    part = "" if subset == "all" else "_32"
    assert runs["dense"]["queries"] == (420 if subset == "all" else 64)
    compared = 0
    for method in ("dense", "bm25", "hybrid"):
        for k in ("1", "4", "8", "20"):
            assert runs[method]["recall"][k] == four[f"{method}{part}_r{k}"], (method, k)
            compared += 1
        assert runs[method]["mrr"] == four[f"{method}{part}_mrr"], method
    if subset == "all":  # chapter 3 glues E over all questions, with the R@20 interval over questions
        for k in ("1", "4", "8", "20"):
            assert runs["dense"]["recall"][k] == three[f"E_R{k}"]
        assert runs["dense"]["mrr"] == three["E_MRR"]
        assert runs["dense"]["recall_interval"]["20"] == [three["E_R20_low"], three["E_R20_high"]]
    assert compared == 12


def test_a_single_run_without_out_of_domain_queries_still_renders():
    query = {"query": "q1/doc", "question": "q1", "phrasing": "doc", "text": "where?", "doc": "d.md", "rank": 1,
             "latency_ms": 0.1, "needle_chunk": None, "first": None}
    run = {"strategy": "E", "method": "dense", "rerank": False, "label": "E/dense", "queries": 4,
           "recall": {"1": 0.25, "4": 0.5, "8": 0.75, "20": 1.0}, "ndcg": {"1": 0.25, "4": 0.4, "8": 0.5, "20": 0.6},
           "recall_interval": {"1": [0.0, 0.5], "4": [0.2, 0.8], "8": [0.5, 1.0], "20": [1.0, 1.0]},
           "mrr": 0.5, "by_phrasing": {}, "latency_ms": {"median": 0.1, "p95": 0.2}, "answers_destroyed": ["q2"],
           "per_query": [query]}
    results = {"corpus": {"documents": 1, "characters": 10, "sections": 0, "failed": [], "skipped": []},
               "ks": [1, 4, 8, 20], "runs": [run], "paired": [], "sweep": []}
    page = report.render(results)
    assert "Only one run: nothing to pair." in page and "no sweep" in page
    assert page.count("data:image/png;base64,") == 1  # the recall plot, and no sweep plot
    assert "0.500 [0.200, 0.800]" in page  # R@4 with its interval, as the book prints it
    assert "<td>q2</td>" in page
