"""The bibliography (book/references.bib) and the book's citations agree (issue 28).

Every entry is cited at least once somewhere in the book ({cite}`key` in book/*.md or a notebook's markdown),
every cited key is an entry, no key is defined twice, the bibliography holds at least 30 works, and each
entry says where it appeared and when. HNSW (Malkov and Yashunin) is cited by its journal year, 2020.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from pybtex.database import parse_string

ROOT = Path(__file__).resolve().parents[1]
BIB = ROOT / "book" / "references.bib"
CITE = re.compile(r"\{cite(?::[a-z]+)?\}`([^`]+)`")
VENUE = ("journal", "booktitle", "publisher", "school", "institution", "howpublished", "url")


def book_texts() -> dict[str, str]:
    """Page -> its prose: book/*.md, and the markdown cells of every notebook."""
    texts = {p.name: p.read_text(encoding="utf-8") for p in sorted((ROOT / "book").glob("*.md"))}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        texts[path.name] = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return texts


def cited() -> Counter:
    """Key -> how many times the book cites it."""
    return Counter(key.strip() for text in book_texts().values() for keys in CITE.findall(text)
                   for key in keys.split(","))


def defined_keys() -> list[str]:
    return re.findall(r"^@\w+\{([^,\s]+),", BIB.read_text(encoding="utf-8"), re.MULTILINE)


def test_no_key_is_defined_twice():
    twice = [k for k, n in Counter(k.lower() for k in defined_keys()).items() if n > 1]
    assert not twice, f"defined more than once in references.bib: {twice}"


def test_every_entry_is_cited_and_every_citation_resolves():
    keys, uses = set(defined_keys()), cited()
    assert not keys - set(uses), f"entries the book never cites: {sorted(keys - set(uses))}"
    assert not set(uses) - keys, f"citations with no entry: {sorted(set(uses) - keys)}"


def test_the_bibliography_holds_the_canon():
    keys = set(defined_keys())
    assert len(keys) >= 30, f"{len(keys)} entries; the book's target is at least 30"
    canon = {"manning2008", "jurafsky2025speech", "karpukhin2020", "thakur2021beir",
             "nguyen2016", "santhanam2022", "robertson2009", "cormack2009", "lewis2020",
             "voorhees1999"}
    assert canon <= keys, sorted(canon - keys)


def test_every_entry_says_where_and_when():
    entries = parse_string(BIB.read_text(encoding="utf-8"), "bibtex").entries
    for key, entry in entries.items():
        undated = key == "sourcefieldreport"  # the field report states no date: cited as "n.d."
        year = entry.fields.get("year", "")
        assert undated or re.fullmatch(r"(19|20)\d\d", year), f"{key}: year {year}"
        assert any(f in entry.fields for f in VENUE), f"{key}: no journal, booktitle or publisher"
        assert entry.persons.get("author") or entry.persons.get("editor"), f"{key}: no author or editor"


def test_hnsw_is_cited_by_its_journal_year():
    entry = parse_string(BIB.read_text(encoding="utf-8"), "bibtex").entries["malkov2020"]
    assert entry.fields["year"] == "2020" and "Pattern Analysis" in entry.fields["journal"]
    stale = [page for page, text in book_texts().items() if re.search(r"Malkov[^.]{0,40}2018", text)]
    assert not stale, f"pages that date HNSW 2018 in the text: {stale}"


def test_a_missing_citation_is_caught():
    assert CITE.findall("see {cite}`a2020,b2021` and {cite:p}`c2019`") == ["a2020,b2021", "c2019"]
