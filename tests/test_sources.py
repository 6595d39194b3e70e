"""data/source_figures.csv, read by ragcourse.book.sources: chapters from the block comments, clear errors."""

from __future__ import annotations

import re
from collections import defaultdict

import pytest

from ragcourse.book import sources

HEAD = "# comment\nname,value,source,where,note\n"

# Values that one source states for different facts, each checked against the sentence that states it:
# (source, value) -> exactly the rows that share it. Any other value a source states in two rows is
# one fact quoted twice (a later chapter re-quoting a figure under its own name): glue the first row.
COINCIDENCES = {
    ("original", 13): {"original_documents",  # chapters in its corpus
                       "c3_ms_per_query"},  # milliseconds to embed one query
    ("original", 10): {"c4_hd_wins",  # queries hybrid wins against dense at R@4
                       "c4_hb_wins",  # queries hybrid wins against BM25 at R@4
                       "original_bluffed_high"},  # out-of-domain queries answered at the 0.675 cut
    ("original", 30): {"original_n_ood",  # out-of-domain queries
                       "original_bluffed_none"},  # of those, answered with no threshold
}


def _meaning(figure: sources.Figure) -> frozenset[str]:
    """The row's note (its where, if it has none) as a set of lower-case words: case, order, punctuation ignored."""
    return frozenset(re.findall(r"[a-z0-9]+", (figure.note or figure.where).lower()))


def _by_value(figures: dict[str, sources.Figure]) -> dict[tuple, list[sources.Figure]]:
    """(source, value) -> the rows that state it, in file order."""
    rows = defaultdict(list)
    for figure in figures.values():
        rows[(figure.source, figure.value)].append(figure)
    return rows


def repeated_facts(figures: dict[str, sources.Figure], coincidences: dict) -> dict[tuple, list[str]]:
    """(source, value) -> names, for rows of one source that state one value and are not declared in
    `coincidences` as exactly that set of rows; rows with the same normalised note are never a coincidence."""
    return {key: sorted(f.name for f in group) for key, group in _by_value(figures).items() if len(group) > 1 and (
        {f.name for f in group} != coincidences.get(key) or len({_meaning(f) for f in group}) < len(group))}


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


def test_a_figure_requoted_under_a_new_name_is_caught(tmp_path):
    figures = sources.load(_write(tmp_path, "a,32,original,ground truth,questions\n# --- chapter 3 ---\n"
                                            "b,32,original,Ground truth (opening),questions of the original\n"
                                            "c,32,field,intro,questions\nd,0.80,original,s,p\ne,0.8,original,t,p\n"))
    assert repeated_facts(figures, {}) == {("original", 32): ["a", "b"], ("original", 0.8): ["d", "e"]}
    declared = {("original", 32): {"a", "b"}, ("original", 0.8): {"d", "e"}}
    assert repeated_facts(figures, declared) == {("original", 0.8): ["d", "e"]}, "same note: one fact"


def test_the_book_file_states_each_fact_of_a_source_once():
    found = repeated_facts(sources.load(), COINCIDENCES)
    assert not found, (f"{sources.FIGURES_FILE.name}: one source states one value in several rows: {found}. "
                       "If it is one fact, keep the first chapter's row and glue its name in the later "
                       "chapters; if the facts differ, give each row a note saying what it counts and "
                       "declare the rows in COINCIDENCES")


def test_each_declared_coincidence_is_in_the_book_file():
    rows = {key: {f.name for f in group} for key, group in _by_value(sources.load()).items()}
    stale = {key: sorted(rows.get(key, ())) for key, names in COINCIDENCES.items() if rows.get(key) != names}
    assert not stale, f"COINCIDENCES no longer matches the rows that share these values: {stale}"


def test_glue_never_rounds_a_source_figure(monkeypatch):
    """The original chapter's p = 0.0015 was published as 0.002 (three places): a misquote."""
    from ragcourse.precision import rounded

    published = {}

    def glue(name, value, decimals):
        published[name] = rounded(value, decimals)

    monkeypatch.setattr(sources, "glue", glue)
    sources.glue_figures("c3_EA20_p", "c3_EC20_p", "original_questions")
    assert published == {"src_c3_EA20_p": 0.0015, "src_c3_EC20_p": 0.0129, "src_original_questions": 32}
