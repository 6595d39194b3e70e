"""Chapter 12's generated question set: SmolLM2-135M writes one question per chunk, as synthetic-question tools do.

The rule, fixed before the run: the chunks of strategy E (the book's pipeline) over the built corpus; in each,
the eligible sentences (`eligible`: prose of 8 to 40 words outside fenced code and tables, starting with a
capital and ending with a full stop, quotes and brackets balanced, occurring once in the corpus and in no
heading); the chunks with at least one, shuffled by `random.Random(SEED)`, the first N_CHUNKS taken, and in each
one sentence drawn by the same generator: the needle. The prompt (`PROMPT`) shows the chunk and the needle and
asks for one question the sentence answers; the generator (`models.generate`: greedy, MAX_NEW_TOKENS new tokens,
one thread) replies once.

Every reply is kept raw in `benchmarks/results/generated_questions.json`, with its prompt's sha256, its cost and
the verdict of the validity rule (`question_sets.extract_question`); the questions that pass, unedited, go to
`data/question_sets/generated.jsonl`, whose sha256 the loader checks (`question_sets.GENERATED_SHA256`).

Run once: `nice -n 19 python benchmarks/generate_questions.py` (through the machine's heavy-command slots).
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import platform
import random
import re
import time

from ragcourse import models
from ragcourse.chunking import chunk_corpus, sentence_spans
from ragcourse.corpus import load_corpus
from ragcourse.groundtruth import GroundTruthError, Question, check_needle
from ragcourse.paths import RESULTS_DIR
from ragcourse.question_sets import QUESTION_SETS_DIR, extract_question, file_sha256
from ragcourse.words import collapse

OUT = RESULTS_DIR / "generated_questions.json"
SET_FILE = QUESTION_SETS_DIR / "generated.jsonl"
SEED, N_CHUNKS, MAX_NEW_TOKENS, STRATEGY = 39, 330, 48, "E"
PROMPT = ("Here is a passage from the Docutils documentation.\n\nPassage:\n{chunk}\n\n"
          "Write one question that a reader of this documentation could ask and that this sentence of the "
          "passage answers:\n{needle}\n\nReply with the question only.")
FENCE = re.compile(r"^ {0,3}(```|~~~)", re.MULTILINE)


def fenced(text: str) -> list[tuple[int, int]]:
    """Spans of fenced code blocks (an unclosed fence runs to the end)."""
    marks = [m.start() for m in FENCE.finditer(text)] + [len(text)]
    return [(marks[i], marks[i + 1]) for i in range(0, len(marks) - 1, 2)]


def eligible(doc, chunk, texts: dict[str, str], corpus, code: list[tuple[int, int]]) -> list[str]:
    """The chunk's sentences that can be needles (see the module docstring), in text order."""
    out = []
    for start, end in sentence_spans(doc.text, chunk.start, chunk.end):
        sentence = doc.text[start:end].strip()
        words = collapse(sentence).split()
        if not (8 <= len(words) <= 40 and sentence[:1].isupper() and sentence.endswith(".")):
            continue
        if any(a <= start < b for a, b in code) or "\n#" in sentence or "|" in sentence:
            continue
        if sentence.count('"') % 2 or sentence.count("(") != sentence.count(")"):  # cut inside a quotation
            continue
        try:
            check_needle(Question("x", doc.id, sentence, "", ""), corpus, collapsed=texts)
        except GroundTruthError:
            continue
        out.append(sentence)
    return out


def chosen(corpus) -> list[tuple[object, str]]:
    """(chunk, needle) pairs by the fixed rule: N_CHUNKS chunks and one sentence each, drawn by SEED."""
    texts = {d.id: collapse(d.text) for d in corpus}
    by_id = {d.id: d for d in corpus}
    code = {d.id: fenced(d.text) for d in corpus}
    pool = []
    for c in chunk_corpus(corpus, STRATEGY):
        sentences = eligible(by_id[c.doc_id], c, texts, corpus, code[c.doc_id])
        if sentences:
            pool.append((c, sentences))
    rng = random.Random(SEED)
    rng.shuffle(pool)
    return [(c, rng.choice(sentences)) for c, sentences in pool[:N_CHUNKS]]


def run_one(chunk, needle: str) -> dict:
    """One generation: the raw reply, its cost and the validity verdict."""
    prompt = PROMPT.format(chunk=chunk.content.strip(), needle=needle)
    started = time.perf_counter()
    reply, new_tokens = models.generate(prompt, max_new_tokens=MAX_NEW_TOKENS, threads=1)
    question, verdict = extract_question(reply, needle)
    return {"chunk": chunk.id, "doc": chunk.doc_id, "section": chunk.section, "needle": needle,
            "prompt_sha256": hashlib.sha256(prompt.encode("utf-8")).hexdigest(), "reply": reply,
            "new_tokens": new_tokens, "seconds": round(time.perf_counter() - started, 2),
            "verdict": verdict, "question": question}


def set_lines(rows: list[dict]) -> str:
    """The set file: one line per reply that passed the rule, ids g001... in run order."""
    kept = [r for r in rows if r["verdict"] == "ok"]
    return "".join(json.dumps({"id": f"g{i:03d}", "procedure": "generated", "doc": r["doc"],
                               "needle": r["needle"], "question": r["question"], "source": r["chunk"],
                               "answerable": True}, ensure_ascii=False) + "\n"
                   for i, r in enumerate(kept, start=1))


def main() -> None:
    corpus = load_corpus()
    pairs = chosen(corpus)
    with contextlib.redirect_stderr(io.StringIO()):  # the GGUF de-quantizer draws a progress bar
        models.load_generator()
    rows, started = [], time.perf_counter()
    for n, (chunk, needle) in enumerate(pairs, start=1):
        rows.append(run_one(chunk, needle))
        print(f"{n}/{len(pairs)} {chunk.id}: {rows[-1]['verdict']} ({time.perf_counter() - started:.0f} s)",
              flush=True)
    seconds = time.perf_counter() - started
    SET_FILE.parent.mkdir(parents=True, exist_ok=True)
    SET_FILE.write_text(set_lines(rows), encoding="utf-8")
    verdicts = {v: sum(r["verdict"] == v for r in rows) for v in sorted({r["verdict"] for r in rows})}
    OUT.write_text(json.dumps({
        "generator": models.generator_name(), "max_new_tokens": MAX_NEW_TOKENS, "decoding": "greedy",
        "strategy": STRATEGY, "seed": SEED, "chunks": len(rows), "prompt": PROMPT, "verdicts": verdicts,
        "set_file_sha256": file_sha256(SET_FILE), "seconds": round(seconds, 1),
        "machine": f"{platform.machine()}, 1 torch thread", "rows": rows}, indent=1, ensure_ascii=False) + "\n",
        encoding="utf-8")
    print(f"wrote {OUT} and {SET_FILE} ({seconds:.0f} s): {verdicts}")


if __name__ == "__main__":
    main()
