"""The models a reader can swap in: RAGCOURSE_RERANKER (a cross-encoder) and RAGCOURSE_GENERATOR (a causal LM).

Each path runs on a tiny model built here, from a random config and a small vocabulary, saved to
tmp_path: no download, no installed wheel, a few seconds.
"""

import numpy as np
import pytest

from ragcourse import models
from ragcourse.rerank import CrossEncoderReranker, default_reranker, rerank

WORDS = "how do i cook paella a grid table draws its cells with plus signs dashes and bars pan fire".split()


@pytest.fixture
def clean_env(monkeypatch):
    for name in ("RAGCOURSE_RERANKER", "RAGCOURSE_GENERATOR", "RAGCOURSE_ALLOW_DOWNLOAD"):
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.fixture
def tiny_cross_encoder(tmp_path):
    """A one-layer BERT with a one-logit head and a word-piece vocabulary of the test's words."""
    torch = pytest.importorskip("torch")
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]) + "\n", encoding="utf-8")
    tokenizer = BertTokenizerFast(vocab_file=str(vocab), do_lower_case=True)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(WORDS) + 5, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, num_labels=1,
                        initializer_range=0.5)  # wide weights: scores far apart
    folder = tmp_path / "cross-encoder"
    BertForSequenceClassification(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture
def tiny_causal_lm(tmp_path):
    """A one-layer GPT-2 over a word-level vocabulary (no chat template), with an end-of-text token."""
    torch = pytest.importorskip("torch")
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers import models as tok_models
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    vocab = {word: i for i, word in enumerate(["<unk>", "<eos>", *WORDS])}
    core = Tokenizer(tok_models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", eos_token="<eos>")
    torch.manual_seed(0)
    config = GPT2Config(vocab_size=len(vocab), n_positions=64, n_embd=16, n_layer=1, n_head=2,
                        bos_token_id=1, eos_token_id=1, initializer_range=0.5)
    folder = tmp_path / "generator"
    GPT2LMHeadModel(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_the_named_cross_encoder_reranks_by_its_own_logits(clean_env, tiny_cross_encoder):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    clean_env.setenv("RAGCOURSE_RERANKER", str(tiny_cross_encoder))
    reranker = default_reranker()
    assert isinstance(reranker, CrossEncoderReranker) and reranker.name == str(tiny_cross_encoder)
    query = "how do i cook paella"
    passages = ["paella pan fire", "a grid table draws its cells", "plus signs dashes and bars", "cook paella"]
    scores = reranker.score(query, passages)
    tokenizer = AutoTokenizer.from_pretrained(tiny_cross_encoder)
    model = AutoModelForSequenceClassification.from_pretrained(tiny_cross_encoder).eval()
    with torch.no_grad():
        logits = model(**tokenizer([query] * 4, passages, return_tensors="pt", padding=True)).logits[:, 0].numpy()
    # CrossEncoder may apply a monotone activation (identity or sigmoid) to the one logit
    assert np.allclose(scores, logits, atol=1e-5) or np.allclose(scores, 1 / (1 + np.exp(-logits)), atol=1e-5)
    assert len(set(np.round(scores, 6))) == 4, "a random head still separates these passages"
    shortlist = [type("C", (), {"text": p})() for p in passages]
    order = [r.chunk.text for r in rerank(reranker, query, shortlist)]
    assert order == [passages[i] for i in np.argsort(-logits, kind="stable")]


def test_a_missing_generator_folder_names_the_variable(clean_env, tmp_path):
    clean_env.setenv("RAGCOURSE_GENERATOR", str(tmp_path / "no-such-model"))
    with pytest.raises(models.ModelNotFoundError, match="RAGCOURSE_GENERATOR"):
        models.load_generator()


def test_the_default_generator_is_the_wheels_gguf(clean_env):
    assert models.generator_spec() is None and models.generator_name() == models.GENERATOR_GGUF


def test_the_named_generator_answers_greedily(clean_env, tiny_causal_lm):
    import torch

    clean_env.setenv("RAGCOURSE_GENERATOR", str(tiny_causal_lm))
    assert models.generator_name() == str(tiny_causal_lm)
    tokenizer, model = models.load_generator()
    assert getattr(tokenizer, "chat_template", None) is None  # so the prompt goes in as plain text
    text, n_new = models.generate("how do i cook paella", max_new_tokens=6)
    assert 1 <= n_new <= 6
    ids = tokenizer("how do i cook paella", return_tensors="pt")["input_ids"]
    with torch.no_grad():  # greedy by hand: the argmax of the next-token logits, one step at a time
        for _ in range(n_new):
            ids = torch.cat([ids, model(ids).logits[:, -1].argmax(-1, keepdim=True)], dim=1)
    assert text == tokenizer.decode(ids[0, -n_new:], skip_special_tokens=True)
    assert models.generate("how do i cook paella", max_new_tokens=6) == (text, n_new)
