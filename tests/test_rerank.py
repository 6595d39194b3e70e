"""Reranking: MaxSim by hand, ordering and ties, the cross-encoder path, late interaction, caches."""


from types import SimpleNamespace

import numpy as np
import pytest

from ragcourse import models
from ragcourse.chunking import Chunk
from ragcourse.rerank import (
    CrossEncoderReranker,
    LateInteractionReranker,
    default_reranker,
    kept_pieces,
    maxsim,
    maxsim_many,
    punctuation_ids,
    rerank,
    rerank_head,
    rerank_rankings,
    token_vectors,
)

PAELLA = "Paella is cooked in a wide shallow pan over an open fire."
TABLES = "A grid table draws its cells with plus signs, dashes and vertical bars."


@pytest.fixture
def no_reranker_env(monkeypatch):
    monkeypatch.delenv("RAGCOURSE_RERANKER", raising=False)
    monkeypatch.delenv("RAGCOURSE_ALLOW_DOWNLOAD", raising=False)
    return monkeypatch


def make_chunk(index: int, content: str) -> Chunk:
    return Chunk("toy", "Toy", "S", 0, len(content), content, f"[Toy > S]\n{content}", "E", index)


class FixedScores:
    """A fake reranker: a fixed score per passage, read from `use`."""

    def __init__(self, scores: dict[str, float], use: str = "content") -> None:
        self.name, self.use, self.scores, self.calls = "fixed", use, scores, 0

    def score(self, query, passages):
        self.calls += 1
        return np.array([self.scores[p] for p in passages])


# --- maxsim -------------------------------------------------------------------------------------

def test_maxsim_matches_a_hand_computed_toy():
    q = np.array([[1.0, 0.0], [0.6, 0.8]])
    p = np.array([[0.0, 1.0], [0.8, 0.6], [-1.0, 0.0]])
    # q0 . p = (0, 0.8, -1) -> 0.8;  q1 . p = (0.8, 0.48 + 0.48, -0.6) -> 0.96
    assert maxsim(q, p) == pytest.approx(0.8 + 0.96, abs=1e-6)


def test_maxsim_many_agrees_with_maxsim_per_passage():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(5, 8))
    passages = [rng.normal(size=(n, 8)) for n in (3, 1, 7)]
    expected = [maxsim(q, p) for p in passages]
    np.testing.assert_allclose(maxsim_many(q, passages), expected, atol=1e-5)


def test_maxsim_many_is_the_same_product_on_float16_or_float32_passages_and_one_blas_thread():
    """Score holds float32 copies of the cached float16 matrices: the same values, so the same scores, bit for bit,
    as the product on the float16 matrices with numpy's BLAS left at its own thread count."""
    rng = np.random.default_rng(1)
    q = rng.normal(size=(14, 384)).astype(np.float32)
    passages = [rng.normal(size=(n, 384)).astype(np.float16) for n in rng.integers(40, 250, size=25)]
    stacked = np.concatenate(passages).astype(np.float32)
    starts = np.concatenate(([0], np.cumsum([len(p) for p in passages])[:-1]))
    free = np.maximum.reduceat(q @ stacked.T, starts, axis=1).sum(axis=0, dtype=np.float64)
    held = maxsim_many(q, [p.astype(np.float32) for p in passages])
    assert held.tolist() == maxsim_many(q, passages).tolist() == np.round(free, 6).tolist()


def test_maxsim_rejects_mismatched_shapes():
    with pytest.raises(ValueError, match="expected non-empty"):
        maxsim(np.ones((2, 3)), np.ones((2, 4)))
    with pytest.raises(ValueError, match=r"\[2, 0\]"):
        maxsim_many(np.ones((2, 3)), [np.ones((2, 3)), np.ones((0, 3))])


# --- rerank -------------------------------------------------------------------------------------

def test_rerank_sorts_by_score_and_breaks_ties_by_old_rank():
    chunks = [make_chunk(i, c) for i, c in enumerate(["a", "b", "c", "d"])]
    reranker = FixedScores({"a": 0.2, "b": 0.9, "c": 0.2, "d": 0.5})
    out = rerank(reranker, "q", chunks)
    assert [r.chunk.content for r in out] == ["b", "d", "a", "c"]
    assert [r.old_rank for r in out] == [2, 4, 1, 3]
    assert [r.rank for r in out] == [1, 2, 3, 4]
    assert [r.score for r in out] == [0.9, 0.5, 0.2, 0.2]
    assert [r.chunk.content for r in rerank(reranker, "q", chunks, top=2)] == ["b", "d"]


def test_rerank_reads_the_field_the_reranker_uses():
    chunk = make_chunk(0, "a")
    assert rerank(FixedScores({"[Toy > S]\na": 1.0}, use="text"), "q", [chunk])[0].score == 1.0
    with pytest.raises(ValueError, match="expected one of"):
        rerank(FixedScores({}, use="title"), "q", [chunk])
    with pytest.raises(ValueError, match="top=0"):
        rerank(FixedScores({"a": 1.0}), "q", [chunk], top=0)


def test_a_reranker_giving_the_wrong_number_of_scores_is_a_value_error():
    """A user's reranker is user input: one ValueError (as for a cross-encoder's output), never an assert,
    which `python -O` would skip."""
    chunks = [make_chunk(i, c) for i, c in enumerate(["a", "b"])]

    class Short(FixedScores):
        def score(self, query, passages):
            return np.array([1.0])

    with pytest.raises(ValueError, match=r"fixed gives scores of shape \(1,\) for 2 passages"):
        rerank(Short({}), "q", chunks)


# --- cross-encoder ------------------------------------------------------------------------------

def test_missing_cross_encoder_folder_raises_a_useful_error(no_reranker_env, tmp_path):
    missing = tmp_path / "no-such-model"
    no_reranker_env.setenv("RAGCOURSE_RERANKER", str(missing))
    with pytest.raises(models.ModelNotFoundError, match="RAGCOURSE_RERANKER") as err:
        default_reranker()
    assert str(missing) in str(err.value) and "RAGCOURSE_ALLOW_DOWNLOAD" in str(err.value)
    with pytest.raises(models.ModelNotFoundError, match="no-such-model"):
        CrossEncoderReranker(str(missing))


@pytest.fixture(scope="module")
def cross_encoder_dir():
    """A local folder CrossEncoder can load: the MiniLM, which it wraps with an untrained
    one-label head (its scores are noise, but the loading, batching and truncation are real)."""
    return models.embedder_spec().source


def test_default_reranker_is_the_cross_encoder_when_the_variable_is_set(
        no_reranker_env, cross_encoder_dir):
    no_reranker_env.setenv("RAGCOURSE_RERANKER", str(cross_encoder_dir))
    loads = models.load_cross_encoder.cache_info().misses
    reranker = default_reranker()
    assert isinstance(reranker, CrossEncoderReranker)
    assert reranker.name == str(cross_encoder_dir)
    assert models.load_cross_encoder.cache_info().misses == loads  # lazy: naming it loaded no model


def test_default_reranker_is_late_interaction_without_the_variable(no_reranker_env):
    reranker = default_reranker()
    assert isinstance(reranker, LateInteractionReranker)
    assert reranker.use == "text"


def test_cross_encoder_batches_and_truncates(cross_encoder_dir):
    long = "tables " * 400
    passages = [PAELLA, TABLES, long, long + "paella paella paella"]
    one = CrossEncoderReranker(str(cross_encoder_dir), batch_size=1, max_length=32)
    many = CrossEncoderReranker(str(cross_encoder_dir), batch_size=32, max_length=32)
    scores = one.score("how do I cook paella", passages)
    assert scores.shape == (4,)
    np.testing.assert_allclose(many.score("how do I cook paella", passages), scores, atol=1e-5)
    assert scores[2] == pytest.approx(scores[3], abs=1e-6), "text past max_length must be cut off"
    assert scores[0] != pytest.approx(scores[1], abs=1e-6)


def test_new_cross_encoder_is_a_model_of_its_own_with_the_same_fresh_head(cross_encoder_dir):
    first, second = (models.new_cross_encoder(cross_encoder_dir, max_length=32) for _ in range(2))
    assert first is not second and first is not models.load_cross_encoder(cross_encoder_dir)
    assert first.max_length == 32
    pair = [("how do I cook paella", PAELLA)]
    assert first.predict(pair).shape == (1,)
    assert first.predict(pair)[0] == second.predict(pair)[0], "torch is seeded before the head is made"


# --- late interaction ---------------------------------------------------------------------------

def test_special_tokens_are_dropped_and_rows_are_unit_norm(embedder):
    tokens = token_vectors(embedder, ["hello world", "a grid table"])
    assert [len(t) for t in tokens] == [2, 3]  # [CLS] and [SEP] are gone, padding too
    np.testing.assert_allclose(np.linalg.norm(tokens[1], axis=1), 1.0, atol=1e-5)
    raw = embedder.encode(["hello world"], output_value="token_embeddings")[0].numpy()  # with CLS/SEP
    inner = raw[1:-1] / np.linalg.norm(raw[1:-1], axis=1, keepdims=True)
    np.testing.assert_allclose(tokens[0], inner, atol=1e-4)


def test_punctuation_ids_are_the_punctuation_word_pieces(embedder):
    tokenizer = embedder.tokenizer
    skip = punctuation_ids(tokenizer)
    pieces = set(tokenizer.convert_ids_to_tokens(sorted(skip)))
    assert {"?", ",", ".", "##.", "(", "..."} <= pieces
    assert not pieces & {"a", "table", "##s", "[UNK]", "[CLS]", "[SEP]", "[PAD]"}
    assert all(set(p.removeprefix("##")) <= set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~") for p in pieces)


def test_skipped_tokens_are_dropped_unless_nothing_would_remain(embedder):
    skip = punctuation_ids(embedder.tokenizer)
    full, filtered, only = token_vectors(embedder, ["a grid table?", "a grid table?", "?!"], skip=frozenset())[0], \
        token_vectors(embedder, ["a grid table?"], skip=skip)[0], token_vectors(embedder, ["?!"], skip=skip)[0]
    assert (len(full), len(filtered), len(only)) == (4, 3, 2)
    assert kept_pieces(embedder, "a grid table?", skip) == ["a", "grid", "table"]
    assert kept_pieces(embedder, "a grid table?") == ["a", "grid", "table", "?"]
    assert kept_pieces(embedder, "?!", skip) == ["?", "!"]
    np.testing.assert_allclose(filtered, full[:3], atol=1e-5)  # same context, the "?" row removed


def test_skip_punctuation_sides(embedder):
    with pytest.raises(ValueError, match="skip_punctuation='sometimes'"):
        LateInteractionReranker(embedder, cache_dir=None, skip_punctuation="sometimes")
    by_side = {side: LateInteractionReranker(embedder, cache_dir=None, skip_punctuation=side)
               for side in ("both", "query", "passage", "none")}
    query, passage = "why, why?", "Why? Because, of course."
    counts = {side: (len(r.query_tokens(query)), len(r.passage_tokens([passage])[0]))
              for side, r in by_side.items()}
    assert counts == {"both": (2, 4), "query": (2, 7), "passage": (4, 4), "none": (4, 7)}
    # "why, why?" against "Why? ...": with the query's "," and "?" gone, two terms remain to match
    scores = {side: float(r.score(query, [passage])[0]) for side, r in by_side.items()}
    assert scores["both"] < scores["passage"] and scores["query"] < scores["none"]


def test_late_interaction_ranks_the_relevant_passage_first(embedder):
    reranker = LateInteractionReranker(embedder, use="content", cache_dir=None)
    chunks = [make_chunk(0, TABLES), make_chunk(1, PAELLA)]
    out = rerank(reranker, "how do I cook paella?", chunks)
    assert [r.chunk.content for r in out] == [PAELLA, TABLES]
    assert out[0].old_rank == 2 and out[0].score > out[1].score


def test_passage_tokens_are_cached_in_memory_and_on_disk(embedder, tmp_path):
    first = LateInteractionReranker(embedder, cache_dir=tmp_path, fingerprint="abcd")
    first.index([PAELLA, TABLES, PAELLA])
    assert first.last_stats["encoded"] == 2  # the repeated passage is encoded once
    before = first.score("cooking rice", [PAELLA, TABLES])
    assert first.last_stats["encoded"] == 0
    assert len(list(tmp_path.glob("abcd-L*.npz"))) == 1

    again = LateInteractionReranker(embedder, cache_dir=tmp_path, fingerprint="abcd")
    after = again.score("cooking rice", [PAELLA, TABLES])
    assert again.last_stats["encoded"] == 0, "a second instance must reuse the disk cache"
    np.testing.assert_array_equal(after, before)

    other = LateInteractionReranker(embedder, cache_dir=tmp_path, fingerprint="ef01")
    other.score("cooking rice", [PAELLA])
    assert other.last_stats["encoded"] == 1, "another model must not reuse these tokens"


def test_rerank_head_reorders_only_the_head():
    chunks = [make_chunk(i, f"passage {i}") for i in range(5)]
    fake = FixedScores({"passage 0": 0.1, "passage 1": 0.9, "passage 2": 0.5, "passage 3": 9.0, "passage 4": 8.0})
    out = rerank_head(fake, "q", chunks, depth=3)
    assert [c.index for c in out] == [1, 2, 0, 3, 4]  # 3 and 4 score higher but sit below the cut
    assert [c.index for c in rerank_head(fake, "q", chunks, depth=10)] == [3, 4, 1, 2, 0]
    with pytest.raises(ValueError, match="depth=0"):
        rerank_head(fake, "q", chunks, depth=0)


def test_rerank_rankings_reranks_the_head_of_every_query_and_keys_by_id():
    chunks = [make_chunk(i, f"passage {i}") for i in range(4)]
    fake = FixedScores({"passage 0": 0.1, "passage 1": 0.9, "passage 2": 0.5, "passage 3": 9.0})
    queries = [SimpleNamespace(id="q1/doc", text="a"), SimpleNamespace(id="q1/ticket", text="b")]
    rankings = {"q1/doc": chunks, "q1/ticket": chunks[::-1], "q2/doc": chunks}
    out = rerank_rankings(fake, queries, rankings, depth=2)
    assert list(out) == ["q1/doc", "q1/ticket"]  # one entry per query given, not per ranking
    assert [c.index for c in out["q1/doc"]] == [1, 0, 2, 3]  # 0.9 over 0.1; 2 and 3 below the cut
    assert [c.index for c in out["q1/ticket"]] == [3, 2, 1, 0]  # 9.0 over 0.5 already in order
    assert fake.calls == 2


def test_query_tokens_are_remembered_across_instances_unless_told_not_to(embedder, monkeypatch):
    from ragcourse import rerank

    calls = []
    real = rerank.token_vectors
    monkeypatch.setattr(rerank, "token_vectors", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    monkeypatch.setattr(rerank, "_QUERY_TOKENS", {})
    first, second = (LateInteractionReranker(embedder, cache_dir=None, fingerprint="f") for _ in range(2))
    a = first.query_tokens("why, why?")
    b = second.query_tokens("why, why?")  # another instance, same model and skip list: remembered
    assert b is a and calls == [["why, why?"]]
    unskipped = LateInteractionReranker(embedder, cache_dir=None, fingerprint="f", skip_punctuation="none")
    unskipped.query_tokens("why, why?")
    timed = LateInteractionReranker(embedder, cache_dir=None, fingerprint="f", remember_queries=False)
    np.testing.assert_array_equal(timed.query_tokens("why, why?"), a)  # encoded again, the same vectors
    assert len(calls) == 3  # a new skip list, then the reranker that never remembers
    monkeypatch.setattr(rerank, "QUERY_MEMORY", 1)
    first.query_tokens("another query")  # the memory is full: the oldest query makes room
    assert len(rerank._QUERY_TOKENS) == 1


def test_a_rerun_over_cached_passages_and_queries_loads_no_model(embedder, tmp_path, monkeypatch):
    """Issue 42: a no-change `eval --rerank` re-run cost 11x a plain one, mostly loading the model again."""
    import json

    from ragcourse import rerank

    first = LateInteractionReranker(embedder, cache_dir=tmp_path, fingerprint="abcd")
    first.index([PAELLA, TABLES])
    before = first.score("cooking rice", [PAELLA, TABLES])
    first.save()
    assert len(list(tmp_path.glob("abcd-L*-queries-nopunct.npz"))) == 1

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": embedder.max_seq_length}))
    monkeypatch.setattr(models, "embedder_spec", lambda: models.ModelSpec("test/minilm", str(folder)))
    monkeypatch.setattr(rerank, "model_fingerprint", lambda source: "abcd")
    monkeypatch.setattr(models, "load_embedder", lambda: pytest.fail("a cached re-run loaded the model"))
    monkeypatch.setattr(rerank, "_QUERY_TOKENS", {})  # a new process
    again = LateInteractionReranker(cache_dir=tmp_path)
    np.testing.assert_array_equal(again.score("cooking rice", [PAELLA, TABLES]), before)
    with pytest.raises(pytest.fail.Exception, match="loaded the model"):
        again.score("a question never asked", [PAELLA])  # only what no cache holds needs the model
