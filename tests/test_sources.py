"""data/source_figures.csv, read by ragcourse.sources: chapters from the block comments, clear errors."""

from __future__ import annotations

import pytest

from ragcourse import sources

HEAD = "# comment\nname,value,source,where,note\n"


def _write(tmp_path, body: str):
    path = tmp_path / "figures.csv"
    path.write_text(HEAD + body, encoding="utf-8")
    return path


def test_rows_carry_their_chapter_block_and_typed_values(tmp_path):
    path = _write(tmp_path, "top,1,field,intro,\n# --- chapter 2 ---\na,13,original,methods,x\n"
                            "# --- chapter 10 ---\nb,0.0015,field,\"hybrid, reranker\",\nc,E,original,s,\n")
    figures = sources.load(path)
    assert [(f.name, f.value, f.chapter) for f in figures.values()] == [
        ("top", 1, None), ("a", 13, 2), ("b", 0.0015, 10), ("c", "E", 10)]
    assert figures["b"].where == "hybrid, reranker" and figures["a"].note == "x"


def test_a_bad_source_names_the_row_and_the_choices(tmp_path):
    with pytest.raises(ValueError, match=r"'a' has source 'paper'.*\['field', 'original'\]"):
        sources.load(_write(tmp_path, "a,1,paper,intro,\n"))


def test_a_repeated_name_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="'a' appears twice"):
        sources.load(_write(tmp_path, "a,1,field,intro,\n# --- chapter 3 ---\na,2,original,s,\n"))


def test_the_book_file_loads_and_names_are_glue_safe():
    figures = sources.load()
    assert figures, "data/source_figures.csv has no rows"
    bad = [n for n in figures if not n.replace("_", "").isalnum()]
    assert not bad, f"names must be letters, digits and _ (they become glue keys src_<name>): {bad}"


def test_glue_figures_rejects_a_missing_name():
    with pytest.raises(KeyError, match="no_such_figure"):
        sources.glue_figures("no_such_figure")


def test_a_row_with_an_unquoted_comma_names_its_line(tmp_path):
    with pytest.raises(ValueError, match=r"figures.csv:4: 6 fields, expected 5"):
        sources.load(_write(tmp_path, "a,1,field,intro,\nb,2,field,hybrid, reranker,\n"))
