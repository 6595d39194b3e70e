"""Tests for chapter 9's genre corpora: ragcourse.genres (run time), ragcourse.build.genres (set-up) and
their ground truth (ragcourse.groundtruth.load_genre_questions).

Tests that need the built genres call `load_genre`, which raises a CorpusError naming what to run when
they are missing (as the `corpus` fixture does for the main corpus): run `make corpus` first.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import pytest

import ragcourse.genres
from ragcourse.corpus import CorpusError, Document, fingerprint, sections
from ragcourse.genres import GENRES, GENRES_DIR, check_genre, genre_lock, load_genre
from ragcourse.groundtruth import GenreQuestion, GroundTruthError, load_genre_questions, load_questions
from ragcourse.words import collapse

EXPECTED_DOCUMENTS = {"legal": 24, "api": 31, "threads": 30, "wiki": 19}


@pytest.fixture(scope="module", params=GENRES)
def genre(request):
    """(name, documents) of each built genre, verified against data/genres.lock.json."""
    return request.param, load_genre(request.param)


def test_run_time_module_loads_no_build_dependency():
    code = ("import sys, ragcourse.genres, ragcourse.groundtruth; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('docutils', 'mwparserfromhell')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# ----- the built genres against the lock


def test_genre_matches_its_lock(genre):
    name, docs = genre
    lock = genre_lock(name)
    assert len(docs) == EXPECTED_DOCUMENTS[name] == lock["profile"]["documents"]
    assert fingerprint(docs) == lock["fingerprint"]
    assert sorted(lock["documents"]) == [d.id for d in docs]
    assert sum(len(d.text) for d in docs) == lock["profile"]["characters"]


def test_genre_size_is_within_the_chapters_budget(genre):
    name, docs = genre
    assert 100_000 <= sum(len(d.text) for d in docs) <= 400_000, name


def test_every_document_has_an_id_a_title_and_a_section(genre):
    name, docs = genre
    assert [d.id for d in docs] == sorted({d.id for d in docs})
    for doc in docs:
        assert re.fullmatch(r"[a-z0-9][a-z0-9.-]*", doc.id), doc.id
        assert doc.title.strip() and "\n" not in doc.title, doc.id
        assert any(s.headed for s in sections(doc.text)), f"{name}/{doc.id} has no ## section"
        assert doc.text.endswith("\n") and not doc.text.startswith("\n"), doc.id


def test_lock_records_each_source_with_hash_and_licence():
    legal, api, threads, wiki = (genre_lock(g)["source"] for g in GENRES)
    assert legal["sha256"].startswith("54cc8d13") and legal["licence"] == "CC0-1.0"
    assert api["sha256"].startswith("d47fbf30") and api["licence"] == "BSD-3-Clause"
    assert wiki["sha256"].startswith("91a7fa5e") and "CC-BY-SA-3.0" in wiki["attribution"]
    assert "not real tickets" in threads["label"]
    assert sorted(threads["packages"]) == ["emacs-common", "git-doc"]
    for package in threads["packages"].values():
        assert package["licence"].startswith("GPL") and package["texts"]
        assert all(re.fullmatch(r"[0-9a-f]{64}", h) for h in package["texts"].values())


def test_genres_keep_their_own_structure():
    legal = {d.id: d for d in load_genre("legal")}
    assert [s.title for s in sections(legal["apache-2.0"].text) if s.headed][7] == "8. Limitation of Liability."
    api = {d.id: d for d in load_genre("api")}
    weighted = [s.title for s in sections(api["shortest-paths-weighted"].text)]
    assert "bidirectional_dijkstra(G, source, target, weight='weight')" in weighted
    assert "Raises\n------\nNodeNotFound\n    If `source` or `target` is not in `G`.\n\nNetworkXNoPath\n" in (
        api["shortest-paths-weighted"].text)
    wiki = load_genre("wiki")
    assert not any("[[" in d.text or "{{" in d.text or "<ref" in d.text for d in wiki)


# ----- clear errors


def _copy(name, tmp_path):
    shutil.copytree(GENRES_DIR / name, tmp_path / name)
    return tmp_path / name


def test_altered_file_names_genre_file_and_command(tmp_path):
    folder = _copy("api", tmp_path)
    target = folder / "exception.md"
    target.write_text(target.read_text(encoding="utf-8").replace("path", "road", 1), encoding="utf-8")
    with pytest.raises(CorpusError, match="genre 'api'") as caught:
        load_genre("api", root=tmp_path)
    assert str(target) in str(caught.value) and "make corpus" in str(caught.value)


def test_missing_file_names_genre_file_and_command(tmp_path):
    folder = _copy("threads", tmp_path)
    (folder / "git-howto-use-git-daemon.md").unlink()
    with pytest.raises(CorpusError, match=r"genre 'threads'.*git-howto-use-git-daemon\.md is missing.*make corpus"):
        load_genre("threads", root=tmp_path)


def test_missing_genre_says_what_to_run(tmp_path):
    with pytest.raises(CorpusError, match=r"genre 'wiki': no built corpus .*make corpus"):
        load_genre("wiki", root=tmp_path)


def test_document_left_out_of_the_manifest_is_an_error(tmp_path):
    folder = _copy("legal", tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    manifest["documents"] = [e for e in manifest["documents"] if e["id"] != "mpl-2.0"]
    (folder / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(CorpusError, match=r"\['mpl-2.0'\] are missing"):
        load_genre("legal", root=tmp_path)


@pytest.mark.parametrize("bad", ["blog", "Legal", ""])
def test_unknown_genre_names_the_valid_choices(bad):
    with pytest.raises(ValueError, match=r"expected one of \['legal', 'api', 'threads', 'wiki'\]"):
        load_genre(bad)
    with pytest.raises(ValueError, match=repr(bad)):
        check_genre(bad)


def test_missing_lock_is_a_clear_error(tmp_path):
    with pytest.raises(CorpusError, match="--update-lock"):
        genre_lock("legal", lock_path=tmp_path / "none.json")


def test_check_command_passes():
    assert ragcourse.genres.main(["check"]) == 0
    assert ragcourse.genres.main(["build"]) == 2


# ----- the build steps on small inputs


@pytest.fixture(scope="module")
def build():
    import ragcourse.build.genres

    return ragcourse.build.genres


def test_legal_headings_follow_the_clause_numbers(build):
    raw = ("Preamble citing section 3.\n\n1. Definitions\n\n   2. an indented list item\n"
           "3. Not the next clause\n2. Grant\nText.\n*  3. Boxed clause  *\n")
    heads = [s.title for s in sections(build.legal_text(raw)) if s.headed]
    assert heads == ["1. Definitions", "2. Grant", "3. Boxed clause"]


def test_a_long_clause_line_stays_whole_below_its_lead(build):
    long_line = "2. Terms. " + "x " * 60
    assert build.legal_text("Intro.\n\n1. Scope\nA.\n\n" + long_line + "\n") == (
        "Intro.\n\n## 1. Scope\nA.\n\n## 2. Terms.\n" + long_line.rstrip() + "\n")


def test_howto_keeps_headers_and_turns_underlines_into_headings(build):
    raw = ("From: A <a@example.org>\nMessage-ID: <x@y>\nSubject: Re: help\n\nHow to do it\n============\n\n"
           "Text.\n\nStep one\n--------\n\n------------\n    $ git log\n------------\n")
    doc = build.howto_document("do-it.txt", raw)
    assert doc == Document("git-howto-do-it", "How to do it", "From: A <a@example.org>\nSubject: Re: help\n\n"
                           "## How to do it\n\nText.\n\n## Step one\n\n------------\n    $ git log\n------------\n")


def test_problems_file_gives_one_document_per_category(build):
    entry = "** Emacs crashes.\n" + "Because of X. " * 80 + "\n*** A sub-case.\nWork around it.\n"
    raw = "Known Problems\n\n* Crash bugs\n\n" + entry + "* Tiny\n** x\n\f\nLicence text\n"
    docs = build.problems_documents(raw)
    assert [(d.id, d.title) for d in docs] == [("emacs-problems-crash-bugs", "Crash bugs")]
    assert [s.title for s in sections(docs[0].text) if s.headed] == ["Emacs crashes.", "A sub-case."]


def test_changed_debian_texts_stop_the_build(build, tmp_path):
    texts = {"PROBLEMS": "same"}
    build.check_texts("emacs-common", tmp_path / "e.deb", texts, build.text_sha256(texts))
    build.check_texts("emacs-common", tmp_path / "e.deb", texts, None)  # no lock yet: nothing to compare
    with pytest.raises(CorpusError, match=r"threads: the texts in .*e\.deb differ from the pinned ones \(PROBLEMS\)"):
        build.check_texts("emacs-common", tmp_path / "e.deb", {"PROBLEMS": "changed"}, build.text_sha256(texts))


def test_wrong_source_hash_is_a_clear_error(build, tmp_path):
    fake = tmp_path / "networkx-3.6.1-py3-none-any.whl"
    fake.write_bytes(b"not a wheel")
    with pytest.raises(CorpusError, match=r"has sha256 .*expected d47fbf30.*delete the file"):
        build.check_sha256(fake, build.NETWORKX["sha256"], "networkx wheel")
    with pytest.raises(CorpusError, match="not found"):
        build.check_sha256(tmp_path / "absent.whl", build.NETWORKX["sha256"], "networkx wheel")


@pytest.mark.parametrize("name", ["legal", "api", "threads"])
def test_rebuilding_from_the_pinned_sources_gives_the_locked_fingerprint(build, name):
    docs, source = build.build_genre(name, {g: genre_lock(g) for g in GENRES})
    assert fingerprint(docs) == genre_lock(name)["fingerprint"]
    assert source == genre_lock(name)["source"]


# ----- ground truth


@pytest.fixture(scope="module", params=GENRES)
def genre_questions(request):
    return request.param, load_genre_questions(request.param)


def test_each_genre_has_enough_questions_spread_over_documents(genre_questions):
    name, questions = genre_questions
    assert len(questions) >= 16
    assert all(isinstance(q, GenreQuestion) for q in questions)
    assert len({q.doc for q in questions}) >= 14, name
    assert all(q.question != q.ticket and q.needle not in q.question for q in questions)


def test_question_ids_are_unique_across_genres():
    ids = [q.id for g in GENRES for q in load_genre_questions(g)]
    assert len(ids) == len(set(ids)) and all(i.startswith(GENRES) for i in ids)


def test_the_field_reports_cases_are_asked():
    legal = [collapse(q.needle).lower() for q in load_genre_questions("legal")]
    assert any("liability" in n and ("limited" in n or "exceed" in n) for n in legal)  # a liability cap
    assert any("indemnify" in n for n in legal)
    api = [q for q in load_genre_questions("api") if q.identifier]
    assert len(api) >= 3 and any("NetworkXNoPath" in q.question for q in api)
    threads = [q for q in load_genre_questions("threads") if q.identifier]
    assert len(threads) >= 3


def test_identifier_flag_must_be_a_boolean(tmp_path):
    record = {"id": "x1", "doc": "exception", "needle": "Exception for unexpected termination of algorithms.",
              "question": "q?", "ticket": "t", "identifier": "yes"}
    path = tmp_path / "api.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(GroundTruthError, match=r"api\.jsonl:1: fields \['identifier'\] .*true or false"):
        load_genre_questions("api", path=path)
    path.write_text(json.dumps(record | {"identifier": True}) + "\n", encoding="utf-8")
    assert load_genre_questions("api", path=path)[0].identifier is True
    path.write_text(json.dumps(record | {"identifier": True, "extra": 1}) + "\n", encoding="utf-8")
    with pytest.raises(GroundTruthError, match=r"unexpected \['extra'\]"):
        load_genre_questions("api", path=path)


def test_genre_needles_are_checked_against_their_genre(tmp_path):
    record = {"id": "x1", "doc": "mpl-2.0", "needle": "This text is not in any licence.", "question": "q?",
              "ticket": "t"}
    path = tmp_path / "legal.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(GroundTruthError, match="needle not found"):
        load_genre_questions("legal", path=path)
    with pytest.raises(ValueError, match="expected one of"):
        load_genre_questions("tickets", path=path)


def test_main_ground_truth_format_is_unchanged(tmp_path):
    record = {"id": "x1", "doc": "user-config", "needle": "n", "question": "q", "ticket": "t", "identifier": False}
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(GroundTruthError, match=r"unexpected \['identifier'\]"):
        load_questions(path, corpus=[Document("user-config", "T", "n")])
