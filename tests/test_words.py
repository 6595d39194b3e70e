"""ragcourse.words: the two content-word rules, each chapter's own, side by side in one module."""

from __future__ import annotations

import ast
from pathlib import Path

from ragcourse import citations, signals, words

SRC = Path(words.__file__).parent


def test_the_two_rules_differ_where_the_docstring_says():
    text = "The tables don't support read-only lists"
    # chapter 6: BM25's tokens (apostrophes and hyphens split), 3+ characters, no plural rule
    assert words.query_words(text) == {"tables", "don", "support", "read", "only", "lists"}
    # chapter 7: words as a reader sees them, a final plural s dropped, "only" a function word
    assert words.claim_words(text) == {"table", "don't", "support", "read-only", "list"}


def test_each_chapter_reads_its_rule_from_words():
    assert signals.query_words is words.query_words
    assert citations.content_words("Lists need blank lines [12].") == words.claim_words("Lists need blank lines.")


def test_stopword_lists_are_written_once():
    """No module but `words` assigns a name containing STOPWORDS (there were two, with different words)."""
    owners = sorted({path.name for path in SRC.rglob("*.py")
                     for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                     if isinstance(node, ast.Assign)
                     for target in node.targets if isinstance(target, ast.Name) and "STOPWORDS" in target.id})
    assert owners == ["words.py"]
