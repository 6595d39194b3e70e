"""Chapter 9 trial: can SmolLM2-135M choose chunk breaks on a page? (a measurement, not a test).

For each of a few pages, `ragcourse.genre_chunking.llm_break_calls` shows the model windows of
numbered paragraphs (headings hidden) and asks which ones begin a new topic. This script stores, per
call, the prompt, the raw answer and the parsed breaks, plus how often an answer is parseable, valid
and non-trivial, how many of its breaks fall on a real section start (the `## ` headings the model
did not see) against the rate of a random pick, the LLM calls and the seconds per 100k characters,
for two wordings of the question: the package's (`BREAKS_PROMPT`) and one with a worked example.
The chapter reads `benchmarks/results/llm_breaks.json` and recomputes every statistic from it.

Pages: the first five of the wiki genre corpus. Run: `nice -n 19 python benchmarks/llm_breaks.py` (a few minutes).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict

from ragcourse import models
from ragcourse.book import timings
from ragcourse.chunking import chunk
from ragcourse.corpus import Document, sections
from ragcourse.genre_chunking import (
    BREAKS_PROMPT,
    LLM_SHOW,
    LLM_TOKENS,
    LLM_WINDOW,
    body_paragraphs,
    break_offsets,
    chunk_at_breaks,
    heading_chunk,
    llm_break_calls,
)
from ragcourse.genres import load_genre
from ragcourse.paths import RESULTS_DIR

OUT = RESULTS_DIR / "llm_breaks.json"
#: A second wording with one worked example, so a weak answer cannot be blamed on the bare prompt alone.
ONE_SHOT = ("Paragraphs are numbered. Name the paragraphs that start a new topic.\n\n"
            "Example:\n[1] Paris is the capital of France.\n[2] It lies on the Seine.\n"
            "[3] Bananas are rich in potassium.\n[4] They grow in the tropics.\nAnswer: 3\n\n"
            "Now:\n{paragraphs}\nAnswer:")
TEMPLATES = {"zero-shot": BREAKS_PROMPT, "one-shot": ONE_SHOT}
PAGES = 5


def pages() -> tuple[str, list[Document]]:
    """The wiki genre corpus's first pages (built by `make corpus`; a missing corpus stops the trial)."""
    return "wiki genre corpus", load_genre("wiki")[:PAGES]


def section_starts(doc: Document) -> set[int]:
    """Offsets of the first paragraph of every headed section: the topic starts the model cannot see."""
    firsts = set()
    for sec in sections(doc.text):
        paras = [p for p in body_paragraphs(doc) if sec.body <= p[0] < sec.end]
        if sec.headed and paras:
            firsts.add(paras[0][0])
    return firsts


def timed_ask(log: list[dict]):
    """`ask` for `llm_break_calls` that records seconds, new tokens and the load average per call."""
    def ask(prompt: str) -> str:
        started = time.perf_counter()
        text, tokens = models.generate(prompt, LLM_TOKENS, threads=1)
        log.append({"seconds": round(time.perf_counter() - started, 3), "new_tokens": tokens,
                    "loadavg_1min": round(os.getloadavg()[0], 2)})
        return text
    return ask


def page_record(doc: Document, template: str) -> dict:
    """All calls for one page, each with its hits against the hidden section starts."""
    log: list[dict] = []
    calls = llm_break_calls(doc, timed_ask(log), template=template)
    paras, starts = body_paragraphs(doc), section_starts(doc)
    records = []
    for call, timing in zip(calls, log, strict=True):
        window = paras[call.first:call.first + LLM_WINDOW]
        true = [k for k in range(2, len(window) + 1) if window[k - 1][0] in starts]
        records.append({"first": call.first, "paragraphs": len(window), "prompt": call.prompt,
                        "answer": call.answer, **asdict(call.parsed), "true_starts": true, **timing})
    return {"id": doc.id, "characters": len(doc.text), "paragraphs": len(paras), "calls": records,
            "chunks": {"llm-breaks": len(chunk_at_breaks(doc, break_offsets(doc, calls))),
                       "headings": len(heading_chunk(doc)), "E": len(chunk(doc, "E"))}}


def main() -> int:
    source, docs = pages()
    started = time.perf_counter()
    models.load_generator()
    load_seconds = time.perf_counter() - started
    loads = [os.getloadavg()[0]]
    trials = [{"name": name, "template": template, "pages": [page_record(doc, template) for doc in docs]}
              for name, template in TEMPLATES.items()]
    loads.append(os.getloadavg()[0])
    out = {"source": source, "model": models.GENERATOR_GGUF, "window": LLM_WINDOW, "show": LLM_SHOW,
           "max_new_tokens": LLM_TOKENS, "load_seconds": round(load_seconds, 1),
           "loadavg_1min_start_end": [round(x, 2) for x in loads],
           "machine": timings.machine() | {"generator_threads": 1, "nice": os.nice(0)},
           "trials": trials}
    OUT.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n")
    for trial in trials:
        calls = [c for p in trial["pages"] for c in p["calls"]]
        chars = sum(p["characters"] for p in trial["pages"])
        print(f"{trial['name']}: {len(calls)} calls on {chars} characters, {sum(c['seconds'] for c in calls):.1f} s "
              f"generating; statuses: {sorted({c['status'] for c in calls})}")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
