"""ragcourse.words: the two content-word rules, each chapter's own, side by side in one module."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from ragcourse import citations, signals, words

SRC = Path(words.__file__).parent
KIT = Path(__file__).resolve().parents[1] / "kit"


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


def test_collapse_imports_without_numpy_or_scipy():
    """The grader's memory-limited child (kit/analysis.py) imports `collapse`: that must not load numpy or scipy."""
    code = "import sys, ragcourse.words; print(sorted(m for m in ('numpy', 'scipy') if m in sys.modules))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC.parent), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == "[]"


def _collapses_whitespace(node: ast.AST) -> bool:
    """`" ".join(x.split())`: whitespace runs made one space, the rule `words.collapse` names."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "join"
            and isinstance(node.func.value, ast.Constant) and node.func.value.value == " "
            and len(node.args) == 1 and isinstance(node.args[0], ast.Call)
            and isinstance(node.args[0].func, ast.Attribute) and node.args[0].func.attr == "split"
            and not node.args[0].args)


def test_whitespace_is_collapsed_in_one_place():
    """src/ and kit/ call `words.collapse`; the one `" ".join(x.split())` is its body (kit kept two copies)."""
    found = sorted(f"{path.relative_to(SRC.parent.parent)}:{node.lineno}"
                   for folder in (SRC, KIT) for path in folder.rglob("*.py")
                   for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                   if _collapses_whitespace(node))
    assert found == ["src/ragcourse/words.py:26"]
