"""Chapter 11's injection trial: the planted chunk, the prompt variants, the detector and what counts as obeyed."""

from __future__ import annotations

from types import SimpleNamespace

from ragcourse import injection
from ragcourse.chunking import Chunk
from ragcourse.citations import build_context
from ragcourse.dense import Hit


def chunk(i: int) -> Chunk:
    text = f"Chunk {i} says how a role works."
    return Chunk(f"doc{i}", f"Doc {i}", f"Section {i}", 0, len(text), text, text, "E", i)


class Retriever:
    """The same three chunks for every question, nearest first."""

    def retrieve(self, query, k, method):
        assert method == "hybrid"
        return [Hit(chunk(i), 0.1 * i, i + 1) for i in range(k)]


def test_planted_trial_plants_the_first_hit_of_each_question_and_builds_every_variant():
    questions = [SimpleNamespace(id=f"q{i}", question=f"Question {i}?") for i in range(5)]
    for example in (False, True):
        trial = injection.planted_trial(Retriever(), questions, 3, "hybrid", example=example)
        assert [t.template for t in trial] == [0, 1, 2, 3, 0]  # the four phrasings in turn
        for q, t in zip(questions, trial, strict=True):
            instruction = injection.INSTRUCTIONS[t.template]
            assert t.question == q.id and t.chunk.content == f"{chunk(0).content}\n\n{instruction}"
            assert [c.quote for c in t.citations] == [t.chunk.content, chunk(1).content, chunk(2).content]
            assert list(t.prompts) == list(injection.PROMPTS)
            as_is = build_context(q.question, [Hit(t.chunk, 0.0, 1), Hit(chunk(1), 0.1, 2), Hit(chunk(2), 0.2, 3)],
                                  example=example).prompt
            assert t.prompts["as is"] == as_is
            assert all(instruction in prompt for prompt in t.prompts.values())
            assert t.prompts["rule"].startswith(injection.RULE) == example
            assert t.prompts["fenced"].count("<source id=") == 3
