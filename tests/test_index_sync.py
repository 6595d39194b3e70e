"""Tests for keeping an index up with its folder: sync by content hash, the atomic commit (killed at every step and
at random), the writer lock, two writers at once, and inputs that are not files (ragcourse.index, chapter 8)."""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from ragcourse import dense, index_format, index_lock
from ragcourse.cli.main import main
from ragcourse.index_format import COMMIT_STEPS, load
from ragcourse.index_lock import WriterBusyError, writer_lock
from ragcourse.index_sync import sync_folder

DIM = 16


def fake_embed(texts: list[str]) -> np.ndarray:
    """Hashing bag of words: each lower-cased word adds 1 to bucket md5(word) % DIM."""
    out = np.zeros((len(texts), DIM), dtype=np.float32)
    for i, text in enumerate(texts):
        for word in re.findall(r"\w+", text.lower()):
            out[i, int(hashlib.md5(word.encode()).hexdigest(), 16) % DIM] += 1.0
    return out + 0.01


class Counting:
    """An embed function that counts its calls and the texts it embedded."""

    def __init__(self):
        self.calls, self.texts = 0, 0

    def __call__(self, texts):
        self.calls, self.texts = self.calls + 1, self.texts + len(texts)
        return fake_embed(texts)


def page(n: int, extra: str = "") -> str:
    """A Markdown file with a `# ` title and two sections (so strategy E gives 3 chunks)."""
    return (f"# Page {n}\n\nIntro of page {n}.\n\n## Tents {n}\nStake corner {n} first. {extra}\n\n"
            f"## Stoves {n}\nNever cook inside tent {n}.\n")


def write_pages(root: Path, numbers) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for n in numbers:
        (root / f"p{n:02d}.md").write_text(page(n), encoding="utf-8")
    return root


def sync(docs: Path, out: Path, embed=fake_embed, **kwargs):
    return sync_folder(docs, out, embed=embed, model_name="fake", dim=DIM, **kwargs)


def holds_exactly(out: Path, docs: Path) -> None:
    """The saved index holds one record per current file, each with the current bytes' hash."""
    index = load(out)
    files = sorted(p.name for p in docs.iterdir())
    assert [r.doc_id for r in index.records] == files
    assert all(r.sha256 == hashlib.sha256((docs / r.doc_id).read_bytes()).hexdigest() for r in index.records)
    assert sorted({c.doc_id for c in index.chunks}) == [r.doc_id for r in index.indexed]
    assert all(r.reason == "empty file (0 bytes)" for r in index.failed)  # a kill while the folder was written


def test_a_rerun_with_nothing_changed_embeds_nothing_and_commits_nothing(tmp_path):
    docs, out = write_pages(tmp_path / "docs", range(5)), tmp_path / "idx"
    first = Counting()
    report = sync(docs, out, embed=first)
    assert (first.calls, first.texts) == (1, 15)  # one call for every new chunk text (3 in each file)
    assert report.summary().splitlines()[:2] == [
        "5 file(s): 5 indexed, 0 failed, 15 chunks stored",
        "sync: 5 added, 0 changed, 0 deleted, 0 renamed, 0 unchanged; 15 chunk(s) embedded, 0 reused"]
    again, asked = Counting(), []
    report = sync_folder(docs, out, embed=again, model_name="fake", dim=lambda: asked.append(1) or DIM)
    assert (again.calls, asked) == (0, [])  # neither the model nor its dimension was needed
    assert report.changes.line() == ("sync: 0 added, 0 changed, 0 deleted, 0 renamed, 5 unchanged; "
                                     "0 chunk(s) embedded, 0 reused")
    assert index_format.committed_version(out) == 1  # nothing changed, nothing written


def test_edits_deletions_renames_and_an_addition_cost_only_new_chunk_texts(tmp_path):
    docs, out = write_pages(tmp_path / "docs", range(6)), tmp_path / "idx"
    sync(docs, out)
    (docs / "p00.md").write_text(page(0, extra="Check the guy ropes."), encoding="utf-8")  # one section edited
    (docs / "p01.md").unlink()
    (docs / "p02.md").rename(docs / "renamed.md")  # same bytes, and the title is its `# ` heading
    (docs / "p09.md").write_text(page(9), encoding="utf-8")
    counting = Counting()
    report = sync(docs, out, embed=counting)
    changes = report.changes
    assert (changes.added, changes.changed, changes.deleted) == (("p09.md",), ("p00.md",), ("p01.md",))
    assert changes.renamed == (("p02.md", "renamed.md"),)
    assert (changes.unchanged, changes.embedded, changes.reused) == (3, 1 + 3, 2 + 3)
    assert counting.texts == 4
    holds_exactly(out, docs)
    index = load(out)
    top = index.search(fake_embed(["check the guy ropes stake corner 0"])[0], k=1, model_name="fake")[0]
    assert (top.chunk.doc_id, "guy ropes" in top.chunk.text) == ("p00.md", True)
    assert not [c for c in index.chunks if "page 1." in c.text]  # the deleted file's chunks are gone


def test_a_changed_model_redoes_every_document(tmp_path):
    docs, out = write_pages(tmp_path / "docs", range(3)), tmp_path / "idx"
    sync(docs, out)
    counting = Counting()
    report = sync_folder(docs, out, embed=counting, model_name="other", dim=DIM)
    assert (len(report.changes.changed), counting.texts) == (3, 9)
    load(out).check_compatible("other", DIM)


def _run_in_child(work) -> int:
    """Run `work()` in a forked child; its exit status (os._exit ends it at once, as a kill would)."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            work()
            os._exit(0)
        except BaseException:
            os._exit(3)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def _die_at(step: str):
    def hook(reached: str) -> None:
        if reached == step:
            os._exit(9)

    return hook


@pytest.mark.parametrize("step", COMMIT_STEPS)
def test_a_writer_killed_at_any_step_of_the_commit_leaves_the_old_or_the_new_version(tmp_path, step):
    docs, out = write_pages(tmp_path / "docs", range(3)), tmp_path / "idx"
    sync(docs, out)
    old = load(out).records
    (docs / "p00.md").write_text(page(0, extra="Edited."), encoding="utf-8")
    edited = hashlib.sha256((docs / "p00.md").read_bytes()).hexdigest()
    assert _run_in_child(lambda: sync(docs, out, on_step=_die_at(step))) == 9
    loaded = load(out).records
    if COMMIT_STEPS.index(step) < COMMIT_STEPS.index("swap"):
        assert loaded == old
    else:
        assert [r.sha256 for r in loaded] == [edited] + [r.sha256 for r in old[1:]]
    sync(docs, out)  # the next run cleans up and catches up
    holds_exactly(out, docs)
    assert not [p.name for p in out.iterdir() if ".tmp-" in p.name]
    assert len([p for p in out.iterdir() if p.name.startswith("v")]) <= 2


def _keep_syncing(docs: Path, out: Path) -> None:
    for i in range(1000):
        (docs / f"p{i % 4:02d}.md").write_text(page(i % 4, extra=f"Edit {i}."), encoding="utf-8")
        sync(docs, out)


def test_ten_random_sigkills_always_leave_an_index_that_loads(tmp_path):
    docs, out = write_pages(tmp_path / "docs", range(4)), tmp_path / "idx"
    sync(docs, out)
    rng, versions = random.Random(8), set()
    for _ in range(10):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child, killed below
            _keep_syncing(docs, out)
            os._exit(0)
        time.sleep(rng.uniform(0.02, 0.25))
        os.kill(pid, signal.SIGKILL)
        assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == -signal.SIGKILL
        index = load(out)  # verify() inside: counts, chunks and vectors agree
        assert [r.doc_id for r in index.records] == [f"p{n:02d}.md" for n in range(4)]
        versions.add(index_format.committed_version(out))
    assert len(versions) > 1  # the kills landed while commits were happening
    sync(docs, out)
    holds_exactly(out, docs)


def _hold_lock(out: Path, seconds: float) -> None:
    with writer_lock(out):
        time.sleep(seconds)


def _lock_text(out: Path) -> str:
    return (out / index_lock.LOCK).read_text() if (out / index_lock.LOCK).exists() else ""


def _start_holder(out: Path, seconds: float) -> int:
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        _hold_lock(out, seconds)
        os._exit(0)
    deadline = time.monotonic() + 5
    while _lock_text(out) != f"{pid}\n":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return pid


def test_a_second_writer_waits_or_names_the_first_and_readers_never_block(tmp_path):
    docs, out = write_pages(tmp_path / "docs", range(2)), tmp_path / "idx"
    sync(docs, out)
    holder = _start_holder(out, 1.0)
    with pytest.raises(WriterBusyError, match=f"another writer \\(pid {holder}\\) is updating"):
        sync(docs, out, wait=False)
    started = time.monotonic()
    assert len(load(out).records) == 2  # a reader takes no lock
    assert time.monotonic() - started < 0.5
    heard = []
    sync(docs, out, notify=heard.append)
    assert heard == [f"waiting for the writer with pid {holder} to finish {str(out.resolve())!r}"]
    assert os.waitstatus_to_exitcode(os.waitpid(holder, 0)[1]) == 0


def test_a_lock_left_by_a_dead_writer_is_taken_over(tmp_path):
    docs, out = write_pages(tmp_path / "docs", range(2)), tmp_path / "idx"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    out.mkdir()
    (out / index_lock.LOCK).write_text(f"{dead}\n")
    heard = []
    sync(docs, out, notify=heard.append)
    assert heard == [f"took over the lock left by pid {dead}, which is no longer running"]
    assert (out / index_lock.LOCK).read_text() == ""  # released cleanly: no pid left behind
    holds_exactly(out, docs)


def test_two_writers_started_together_leave_a_whole_index_of_every_current_file(tmp_path):
    docs, out = write_pages(tmp_path / "docs", range(8)), tmp_path / "idx"
    read_end, write_end = os.pipe()
    children = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the children wait for one signal, then sync at once
            os.close(write_end)
            os.read(read_end, 1)
            sync(docs, out, notify=lambda m: (out.parent / f"heard-{os.getpid()}").write_text(m))
            os._exit(0)
        children.append(pid)
    os.close(read_end)
    os.write(write_end, b"go")  # one byte each... both read from the same pipe
    os.close(write_end)
    assert [os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) for pid in children] == [0, 0]
    holds_exactly(out, docs)
    assert index_format.committed_version(out) == 1  # the second found nothing left to do
    heard = [p.read_text() for p in tmp_path.glob("heard-*")]
    assert all(m.startswith("waiting for the writer with pid ") for m in heard)


def test_leftovers_of_a_killed_run_are_removed_at_the_next_start(tmp_path):
    docs, out = write_pages(tmp_path / "docs", range(2)), tmp_path / "idx"
    sync(docs, out)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    (out / f"v000002.tmp-{dead}").mkdir()
    (out / f"manifest.json.tmp-{dead}").write_text("{}")
    (out / "v000005").mkdir()  # renamed but never made current
    (out / "notes.txt").write_text("not ours")
    assert index_format.clean_leftovers(out) == (f"manifest.json.tmp-{dead}", f"v000002.tmp-{dead}", "v000005")
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "notes.txt", "v000001", "writer.lock"]


def test_an_index_saved_without_versions_is_refused_with_what_to_rebuild(tmp_path):
    docs, out = write_pages(tmp_path / "docs", range(2)), tmp_path / "idx"
    index = sync(docs, out).index
    manifest = json.loads((out / "manifest.json").read_text())
    del manifest["vectors"]
    (out / "manifest.json").write_text(json.dumps(manifest))
    np.save(out / "vectors.npy", index.vectors)
    with pytest.raises(index_format.IndexFormatError, match="names vectors None.*Rebuild it"):
        load(out)
    assert index_format.foreign_entries(out) == ["vectors.npy"]  # not an index's file any more


def test_a_manifest_may_not_point_outside_its_index(tmp_path):
    docs, out = write_pages(tmp_path / "docs", range(1)), tmp_path / "idx"
    sync(docs, out)
    manifest = json.loads((out / "manifest.json").read_text())
    (out / "manifest.json").write_text(json.dumps(manifest | {"vectors": "../elsewhere.npy"}))
    with pytest.raises(index_format.IndexFormatError, match="names vectors '../elsewhere.npy'"):
        load(out)


def test_links_out_loops_fifos_and_unlisted_folders_are_reported_with_their_reason(tmp_path, monkeypatch):
    docs = write_pages(tmp_path / "docs", range(2))
    (tmp_path / "secret.md").write_text("# Outside\n\nNot part of the folder.\n")
    (docs / "outside.md").symlink_to(tmp_path / "secret.md")
    (docs / "inside.md").symlink_to(docs / "p00.md")
    (docs / "sub").mkdir()
    (docs / "sub" / "loop").symlink_to(docs)
    (docs / "gone.md").symlink_to(docs / "missing.md")
    os.mkfifo(docs / "pipe.md")
    (docs / "locked").mkdir()
    (docs / "locked" / "a.md").write_text(page(7))
    real_scandir = os.scandir

    def scandir(path="."):  # root reads every folder, so deny one the way chmod 000 does for other users
        if Path(path).name == "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    report = sync(docs, tmp_path / "idx")
    assert [r.doc_id for r in report.index.records] == ["inside.md", "p00.md", "p01.md"]
    skipped = {line.split(":", 1)[0].removeprefix("  SKIPPED "): line.split(":", 1)[1]
               for line in report.summary().splitlines() if "SKIPPED" in line}
    assert sorted(skipped) == ["gone.md", "locked", "outside.md", "pipe.md", "sub/loop"]
    assert "broken" in skipped["gone.md"] and "Permission denied" in skipped["locked"]
    assert "outside the folder" in skipped["outside.md"] and "FIFO" in skipped["pipe.md"]
    assert "not followed" in skipped["sub/loop"]


def test_the_index_may_not_live_inside_its_folder(tmp_path):
    docs = write_pages(tmp_path / "docs", range(1))
    with pytest.raises(ValueError, match="is inside the folder"):
        sync(docs, docs / "idx")


class LazyCountingModel:
    """A stand-in sentence-transformers model whose loads are counted (through `models.Lazy`)."""

    loads = 0

    def __init__(self):
        type(self).loads += 1

    def get_embedding_dimension(self):
        return DIM

    def encode(self, texts, **kwargs):
        rows = fake_embed(list(texts))
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_the_command_loads_the_model_only_when_a_chunk_text_is_new(tmp_path, monkeypatch, capsys):
    from ragcourse.models import Lazy

    def embedder(cache_dir=None):
        return dense.Embedder(model=Lazy(LazyCountingModel), name="counting", fingerprint="c", cache_dir=None)

    monkeypatch.setattr(dense, "load_embedder", embedder)
    monkeypatch.setattr(LazyCountingModel, "loads", 0)
    docs, out = write_pages(tmp_path / "docs", range(3)), tmp_path / "idx"
    assert main(["index", str(docs), "--out", str(out)]) == 0
    assert LazyCountingModel.loads == 1
    assert main(["index", str(docs), "--out", str(out)]) == 0
    assert LazyCountingModel.loads == 1  # nothing new to embed: the model stayed on disk
    (docs / "p01.md").rename(docs / "moved.md")
    assert main(["index", str(docs), "--out", str(out)]) == 0
    assert LazyCountingModel.loads == 1  # a rename reuses every vector
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1] == "sync: 0 added, 0 changed, 0 deleted, 1 renamed, 2 unchanged; 0 chunk(s) embedded, 3 reused"
    (docs / "p00.md").write_text(page(0, extra="New words."), encoding="utf-8")
    assert main(["index", str(docs), "--out", str(out)]) == 0
    assert LazyCountingModel.loads == 2
    with writer_lock(out):  # the lock is per open file, so this process counts as another writer
        assert main(["index", str(docs), "--out", str(out), "--no-wait"]) == 2
    assert f"another writer (pid {os.getpid()}) is updating" in capsys.readouterr().err


def test_a_failing_embedding_call_fails_only_its_document_in_a_sync(tmp_path):
    docs, out = write_pages(tmp_path / "docs", range(3)), tmp_path / "idx"

    def flaky(texts):  # fails on any batch holding page 1's text, as a service rejecting one input would
        if any("page 1." in t for t in texts):
            raise RuntimeError("service unavailable")
        return fake_embed(texts)

    report = sync(docs, out, embed=flaky)
    assert {r.doc_id: r.reason for r in report.index.failed} == {
        "p01.md": "embedding failed: RuntimeError: service unavailable"}
    assert [r.doc_id for r in report.index.indexed] == ["p00.md", "p02.md"]
    retried = sync(docs, out)  # a passing failure is tried again on the next run
    assert (retried.changes.changed, retried.changes.embedded) == (("p01.md",), 3)
    holds_exactly(out, docs)


def test_the_command_caches_vectors_in_the_users_cache_never_the_checkout(tmp_path, monkeypatch, capsys):
    """A non-root reader's `ragcourse index` failed every new file with 'embedding failed: PermissionError' on
    the course checkout's data/cache lock; it now uses the cache `eval` uses ($RAGCOURSE_CACHE, --cache-dir)."""
    from ragcourse.models import Lazy

    asked = []

    def embedder(cache_dir=dense.CACHE_DIR):
        asked.append(cache_dir)
        return dense.Embedder(model=Lazy(LazyCountingModel), name="counting", fingerprint="c", cache_dir=cache_dir)

    monkeypatch.setattr(dense, "load_embedder", embedder)
    monkeypatch.setenv("RAGCOURSE_CACHE", str(tmp_path / "mine"))
    docs = write_pages(tmp_path / "docs", range(2))
    (docs / "bad\nname.md").write_bytes(b"")
    assert main(["index", str(docs), "--out", str(tmp_path / "idx")]) == 1
    assert main(["index", str(docs), "--out", str(tmp_path / "idx2"), "--cache-dir", str(tmp_path / "other")]) == 1
    assert asked == [tmp_path / "mine" / "embeddings", tmp_path / "other" / "embeddings"]
    assert any((tmp_path / "mine" / "embeddings").iterdir()) and dense.CACHE_DIR not in asked
    assert "  FAILED bad\\nname.md: empty file (0 bytes)" in capsys.readouterr().out.splitlines()


def test_a_folder_of_the_users_own_files_is_never_made_an_index(tmp_path, capsys):
    """`ragcourse index DOCS --out ~/work` wrote manifest.json, writer.lock and v000001 among the user's files,
    and its leftover cleaning deletes by name; a folder holding anything an index never writes is refused."""
    docs, mine = write_pages(tmp_path / "docs", range(2)), tmp_path / "mine"
    (mine / "photos").mkdir(parents=True)
    (mine / "notes.txt").write_text("keep", encoding="utf-8")
    with pytest.raises(ValueError, match=r"'.*mine' holds files that are not an index \(notes.txt, photos\)"):
        sync(docs, mine)
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt", "photos"]
    assert main(["index", str(docs), "--out", str(mine)]) == 2
    assert "holds files that are not an index" in capsys.readouterr().err
    sync(docs, tmp_path / "idx")
    (tmp_path / "idx" / "v000001.tmp-99999").mkdir()  # a killed writer's leftover is still the index's own
    assert sync(docs, tmp_path / "idx").index.records
