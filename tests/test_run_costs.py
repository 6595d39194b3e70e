"""The "Run this chapter" box (book/_ext/run_costs.py): its figures come from the timing record's "notebooks"
section, a page in the record's scope without figures fails the build, every notebook page of the table of
contents has its figures, and the built pages show the box. `make run-costs` (scripts/notebook_costs.py) runs
the pages with no row or whose code changed."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from docutils import nodes
from docutils.frontend import get_default_settings
from docutils.parsers.rst import Parser
from docutils.utils import new_document
from sphinx.errors import ExtensionError

from ragcourse import paths
from tests.setup_missing import missing

ROOT = Path(__file__).resolve().parents[1]
HTML = ROOT / "book" / "_build" / "html"
MACHINE = {"cpu": "AMD EPYC", "cores": 2, "memory_gib": 24, "python": "3.11.7", "date": "2026-12-04"}
ROW = {"wall_s": 93.0, "cpu_s": 34.5, "peak_rss_mib": 655, "load_average_before": [3.6, 1.3, 0.5],
       "load_average_after": [6.56, 2.9, 1.2], "cache": "empty", "machine": MACHINE}
TOC = ROOT / "book" / "_toc.yml"

sys.path.insert(0, str(ROOT / "scripts"))
import notebook_costs  # noqa: E402


def extension():
    spec = importlib.util.spec_from_file_location("run_costs_ext", ROOT / "book" / "_ext" / "run_costs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def chapter(text: str = "Title\n=====\n\n.. admonition:: In this chapter\n\n   learn\n\nBody.\n"):
    document = new_document("page", get_default_settings(Parser))
    Parser().parse(text, document)
    return document


@pytest.fixture
def app_with(tmp_path: Path, monkeypatch):
    """A Sphinx app stand-in whose stored results (ragcourse.paths.RESULTS_DIR) hold `section` as the record."""

    def make(section: dict) -> SimpleNamespace:
        monkeypatch.setattr(paths, "RESULTS_DIR", tmp_path)
        (tmp_path / "timings.json").write_text(json.dumps({"notebooks": section}), encoding="utf-8")
        return SimpleNamespace(confdir=str(tmp_path / "book"))

    return make


def test_the_box_gives_minutes_memory_load_set_up_and_download_after_the_opening_box(app_with):
    section = {"scope": ["02-chunking"], "pages": {"02-chunking": ROW}, "setup": "make install corpus"}
    doctree = chapter()
    extension().add_box(app_with(section), doctree, "notebooks/02-chunking")
    first = doctree.next_node(nodes.section)
    assert first.children[1].next_node(nodes.title).astext() == "In this chapter"
    text = first.children[2].astext()
    assert text.startswith("Run this chapter")
    assert "1.6 min of wall time (0.6 min of CPU time)" in text and "0.64 GB of memory" in text  # 93/60, 655/1024
    assert "a load average of 3.6 to 6.6" in text and "make install corpus" in text
    assert "AMD EPYC, 2 cores, 24 GiB, Python 3.11.7, measured 2026-12-04" in text
    assert "The vector cache started empty" in text and "the clone's notebooks/ folder" in text
    assert first.children[2].next_node(nodes.reference)["refuri"] == "../_sources/notebooks/02-chunking.ipynb"


def test_a_lab_gets_its_own_box_that_says_where_the_download_goes(app_with):
    section = {"scope": ["labs/02-chunking"], "pages": {"labs/02-chunking": ROW}, "setup": "make install corpus"}
    doctree = chapter("Lab\n===\n\nBody.\n")
    extension().add_box(app_with(section), doctree, "notebooks/labs/02-chunking")
    text = doctree.next_node(nodes.section).children[1].astext()
    assert text.startswith("Run this lab") and "the clone's notebooks/labs/ folder" in text
    assert doctree.next_node(nodes.reference)["refuri"] == "../../_sources/notebooks/labs/02-chunking.ipynb"


def test_a_page_in_scope_without_figures_fails_and_one_outside_gets_no_box(app_with):
    section = {"scope": ["02-chunking", "labs/03-lab"], "pages": {"02-chunking": ROW}, "setup": "make install corpus"}
    app = app_with(section)
    with pytest.raises(ExtensionError, match="labs/03-lab"):
        extension().add_box(app, chapter(), "notebooks/labs/03-lab")
    doctree = chapter()
    extension().add_box(app, doctree, "notebooks/04-other")
    extension().add_box(app, doctree, "glossary")
    assert "Run this chapter" not in doctree.astext()


def test_pages_are_keyed_by_their_path_under_notebooks():
    assert notebook_costs.page_key(Path("notebooks/03-dense-retrieval.ipynb")) == "03-dense-retrieval"
    assert notebook_costs.page_key(Path("notebooks/labs/03-lab.ipynb")) == "labs/03-lab"


def notebook(path: Path, *codes: str) -> Path:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": "# Title"}] + [
        {"cell_type": "code", "metadata": {}, "source": code, "outputs": [], "execution_count": None} for code in codes]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}), encoding="utf-8")
    return path


def test_run_costs_runs_the_pages_without_a_row_or_whose_code_changed(tmp_path):
    same = notebook(tmp_path / "notebooks" / "01-a.ipynb", "x = 1")
    changed = notebook(tmp_path / "notebooks" / "labs" / "01-a.ipynb", "y = 2")
    new = notebook(tmp_path / "notebooks" / "02-b.ipynb", "z = 3")
    section = {"pages": {"01-a": {"code_sha256": notebook_costs.code_sha256(same)},
                         "labs/01-a": {"code_sha256": notebook_costs.code_sha256(changed)}}}
    notebook(changed, "y = 2", "print(y)")
    assert notebook_costs.to_run([same, changed, new], section) == [changed, new]
    assert notebook_costs.to_run([same, changed, new], section, everything=True) == [same, changed, new]
    prose = json.loads(same.read_text(encoding="utf-8"))
    prose["cells"][0]["source"] = "# Another title"
    same.write_text(json.dumps(prose), encoding="utf-8")
    assert notebook_costs.to_run([same], section) == []  # prose does not change what a run costs


def test_saving_a_row_keeps_the_other_pages_and_sections(tmp_path):
    out = tmp_path / "timings.json"
    out.write_text(json.dumps({"embedding": {"A": 1}, "notebooks": {"pages": {"01-a": ROW}}}), encoding="utf-8")
    notebook_costs.save(out, "labs/01-a", ROW | {"wall_s": 5.0})
    record = json.loads(out.read_text(encoding="utf-8"))
    assert record["embedding"] == {"A": 1} and record["notebooks"]["scope"] == ["01-a", "labs/01-a"]
    assert record["notebooks"]["pages"]["01-a"] == ROW and record["notebooks"]["pages"]["labs/01-a"]["wall_s"] == 5.0


def toc_notebook_pages() -> list[str]:
    """Every notebook page of the book: `01-corpus`, `a2-scale`, `labs/01-corpus`..."""
    return re.findall(r"^\s*- file: notebooks/(\S+)\s*$", TOC.read_text(encoding="utf-8"), re.M)


# Every chapter page (lessons and appendices) must have its figures; a lab page gets its box once it is recorded.
REQUIRED = [page for page in toc_notebook_pages() if not page.startswith("labs/")]


def test_every_chapter_page_of_the_book_has_its_run_cost_in_the_record():
    assert "01-corpus" in REQUIRED and "a2-scale" in REQUIRED and "labs/01-corpus" in toc_notebook_pages()
    rows = json.loads((paths.RESULTS_DIR / "timings.json").read_text(encoding="utf-8"))["notebooks"]["pages"]
    missing = [page for page in REQUIRED if page not in rows]
    assert not missing, f"no run cost for {missing}: run `make run-costs` (it runs only these and changed pages)"
    for page in rows:
        row = rows[page]
        assert row["cache"] == "empty" and row["wall_s"] >= row["cpu_s"] / row["machine"]["cores"] > 0, page
        assert row["peak_rss_mib"] > 0 and len(row["load_average_before"]) == 3 == len(row["load_average_after"])


def test_every_recorded_page_of_the_built_book_shows_its_figures():
    record = json.loads((paths.RESULTS_DIR / "timings.json").read_text(encoding="utf-8"))
    section = record.get("notebooks", {})
    assert set(section.get("scope", [])) <= set(section.get("pages", {}))
    if not (HTML / "index.html").is_file():
        missing("the book is not built (make book)")
    for key in sorted(set(REQUIRED) | set(section["pages"])):
        row = section["pages"][key]
        page = re.sub(r"<[^>]+>", " ", (HTML / "notebooks" / f"{key}.html").read_text(encoding="utf-8"))
        title = "Run this lab" if key.startswith("labs/") else "Run this chapter"
        assert title in page and f"{round(row['wall_s'] / 60, 1)} min of wall time" in page, key
