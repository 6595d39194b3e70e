"""Chapter 11's permission-aware retrieval: no reader ever sees a chunk of a document they may not read."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragcourse.bm25 import BM25, tokenize
from ragcourse.chunking import Chunk
from ragcourse.dense import DenseIndex
from ragcourse.paths import DATA_DIR
from ragcourse.permissions import Access, PermissionError_, leaks, load_access, parse_access, post_filter, pre_filter
from ragcourse.pipeline import METHODS, Retriever

DIM = 16


class HashEmbedder:
    """Bag of hashed words, unit length: enough to rank, no model."""

    name, fingerprint, dim = "hashed words", "test", DIM

    def encode(self, texts, progress=None):
        return np.stack([self.encode_query(t) for t in texts])

    def encode_query(self, text):
        v = np.zeros(DIM)
        for t in tokenize(text):
            v[zlib.crc32(t.encode()) % DIM] += 1.0
        v[0] += 1e-3  # never the zero vector
        return (v / np.linalg.norm(v)).astype(np.float32)


def retriever_for(texts: list[str], docs: list[str]) -> Retriever:
    chunks = [Chunk(doc_id=d, doc_title=d, section="", start=0, end=len(t), content=t, text=t, strategy="E", index=i)
              for i, (t, d) in enumerate(zip(texts, docs, strict=True))]
    embedder = HashEmbedder()
    dense = DenseIndex(chunks=chunks, vectors=embedder.encode(texts), embedder=embedder)
    return Retriever("E", chunks, dense, BM25(texts))


WORDS = st.sampled_from("grid table list title role math config odt slide emacs test repo".split())
TEXTS = st.lists(st.lists(WORDS, min_size=1, max_size=8).map(" ".join), min_size=2, max_size=12)


@settings(max_examples=60, deadline=None)
@given(texts=TEXTS, data=st.data())
def test_pre_filter_never_returns_an_unreadable_chunk(texts, data):
    docs = [data.draw(st.sampled_from("abcd")) for _ in texts]
    allowed = frozenset(data.draw(st.sets(st.sampled_from("abcd"), min_size=1)))
    if not allowed & set(docs):
        with pytest.raises(PermissionError_):
            pre_filter(retriever_for(texts, docs), allowed)
        return
    restricted = pre_filter(retriever_for(texts, docs), allowed)
    query = data.draw(st.lists(WORDS, min_size=1, max_size=4).map(" ".join))
    for method in METHODS:
        ranked = [restricted.chunks[i] for i in restricted.rank(query, method)]
        assert leaks(ranked, allowed) == 0
        assert len(ranked) == sum(d in allowed for d in docs)  # every readable chunk is still rankable


def test_post_filter_loses_results_that_pre_filter_keeps():
    texts = ["grid grid grid", "grid grid", "grid table list role math title odt", "list"]
    r = retriever_for(texts, ["b", "b", "a", "a"])
    ranked = [r.chunks[i] for i in r.rank("grid", "bm25")]
    assert [c.doc_id for c in post_filter(ranked, frozenset("a"), depth=2, k=2)] == []  # top 2 were b's
    pre = pre_filter(r, frozenset("a"))
    assert [c.text for c in (pre.chunks[i] for i in pre.rank("grid", "bm25"))][:2] == [texts[2], "list"]


def test_per_reader_statistics_differ_from_shared_ones():
    texts = ["grid table", "grid", "role role role math"]
    shared = BM25(texts).scores("grid")[:2]
    own = BM25(texts[:2]).scores("grid")
    assert not np.allclose(shared, own)  # the forbidden third text moved the readable ones' scores


def test_the_course_permissions_file_is_whole():
    from ragcourse.corpus import load_corpus

    access = load_access(DATA_DIR / "permissions.json")
    assert access.unlisted(d.id for d in load_corpus()) == []
    assert all(access.readable(groups) for groups in access.users.values())


@pytest.mark.parametrize("bad, where", [
    ({"documents": {"a": "dev"}, "users": {}}, "documents['a']"),
    ({"documents": {}, "users": {"ana": [1]}}, "users['ana']"),
    ({"documents": {}}, "exactly 'documents' and 'users'"),
])
def test_bad_permissions_name_the_entry(bad, where):
    with pytest.raises(PermissionError_, match=where.replace("[", r"\[").replace("]", r"\]")):
        parse_access(bad)


def test_an_unknown_user_is_an_error_and_an_unlisted_document_is_unreadable(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"documents": {"a": ["dev"]}, "users": {"ana": ["dev"]}}))
    access = load_access(path)
    with pytest.raises(PermissionError_, match="'bob'") as refused:
        access.groups_of("bob")
    assert "ana" not in str(refused.value)  # an unknown user learns no other user's name
    assert access.readable_by("ana") == {"a"}
    with pytest.raises(PermissionError_, match="'bob'"):
        access.readable_by("bob")  # no user means no documents, never all of them
    assert access.unlisted(["a", "b"]) == ["b"]
    path.write_text("{not json")
    with pytest.raises(PermissionError_, match="p.json"):
        load_access(path)
    assert isinstance(Access({}, {}).readable(["x"]), frozenset)


def test_search_with_a_user_shows_only_what_they_may_read(corpus, capsys, tmp_path):
    from ragcourse.cli import main

    path = tmp_path / "p.json"
    docs = {d.id: (["eps"] if d.id.startswith("eps-") else ["rest"]) for d in corpus}
    del docs["dev-testing"]  # no entry: readable by nobody, and said so
    path.write_text(json.dumps({"documents": docs, "users": {"mo": ["eps"], "al": ["rest"]}}))
    assert main(["search", "enhancement proposal process", "--user", "al", "--permissions", str(path),
                 "-k", "8"]) == 0
    out, err = capsys.readouterr()
    shown = [line.split()[2] for line in out.splitlines() if line.startswith("[")]
    assert len(shown) == 8 and not any(d.startswith(("eps-", "dev-testing")) for d in shown)
    assert "readable by nobody: dev-testing" in err
    assert main(["search", "how do I run the tests", "--user", "mo", "--permissions", str(path)]) == 0
    shown = [line.split()[2] for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    assert shown and all(d.startswith("eps-") for d in shown)


def test_qdrant_payload_filter_never_returns_an_unreadable_chunk():
    pytest.importorskip("qdrant_client")
    from ragcourse.engines import QdrantEngine

    texts = ["grid table", "grid grid", "role math", "grid role", "table list", "grid"]
    docs = ["a", "b", "a", "c", "b", "c"]
    r = retriever_for(texts, docs)
    engine = QdrantEngine.connect()
    engine.index(r)
    for allowed in ({"a"}, {"b", "c"}):
        for method in METHODS:
            positions = engine.rank("grid role", method, limit=6, readable=allowed)
            assert positions and all(docs[i] in allowed for i in positions)
            assert sorted(positions) == [i for i, d in enumerate(docs) if d in allowed]


def test_eval_as_a_user_indexes_only_what_they_may_read(tmp_path, capsys, monkeypatch):
    from ragcourse.cli import main

    monkeypatch.setenv("RAGCOURSE_CACHE", str(tmp_path / "cache"))
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "tents.md").write_text("# Tents\n\nPitch the tent on flat ground away from dead trees.\n\n"
                                   "Air the tent every morning so that it dries.\n")
    (docs / "stoves.md").write_text("# Stoves\n\nNever run a gas stove inside a closed tent.\n")
    (docs / "salaries.md").write_text("# Salaries\n\nThe guides' salaries are reviewed every March.\n")
    questions = tmp_path / "q.jsonl"
    questions.write_text(
        '{"id": "t", "needle": "Pitch the tent on flat ground away from dead trees.", "question": "Where to pitch?"}\n'
        '{"id": "s", "needle": "Never run a gas stove inside a closed tent.", "question": "Stove in a tent?"}\n'
        '{"id": "a", "needle": "Air the tent every morning so that it dries.", "question": "How to dry a tent?"}\n'
        '{"id": "p", "needle": "The guides\' salaries are reviewed every March.", "question": "Pay reviews?"}\n')
    perms = tmp_path / "p.json"
    perms.write_text(json.dumps({"documents": {"tents.md": ["staff", "hr"], "salaries.md": ["hr"]},
                                 "users": {"sam": ["staff"]}}))
    out = tmp_path / "out"
    code = main(["eval", str(docs), "--questions", str(questions), "--methods", "bm25", "--out", str(out),
                 "--user", "sam", "--permissions", str(perms)])
    assert code == 1  # two lines left out, each only "not readable by sam": no path, title or count of theirs
    err = capsys.readouterr().err
    assert f"left out {questions}:2: s: not readable by sam" in err and f"{questions}:4: p: not readable by sam" in err
    assert "stoves" not in err and "salaries" not in err.lower()
    results = json.loads((out / "results.json").read_text())
    assert results["corpus"]["documents"] == 1
    assert "salaries" not in (out / "report.html").read_text().lower()
    assert main(["eval", str(docs), "--questions", str(questions), "--out", str(tmp_path / "o2"), "--user", "sam"]) == 2
    assert "--user and --permissions go together" in capsys.readouterr().err
