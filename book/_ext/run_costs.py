"""A "Run this chapter" (or "Run this lab") box on every notebook page: its time and memory from the timing record.

The figures come from the "notebooks" section of benchmarks/results/timings.json, written by `make run-costs`
(scripts/notebook_costs.py): wall time, CPU time and peak memory of executing the notebook once from an empty
vector cache, with the load average of the machine and the machine itself beside them. The box also gives the
one set-up command and a download of the notebook. Pages are matched by their path under notebooks/
(`03-dense-retrieval`, `labs/03-dense-retrieval`). A page the record's scope lists but that has no figures fails
the build; any other page without figures gets no box (tests/test_run_costs.py fails for a page of the table
of contents without figures).
"""

from __future__ import annotations

import json
from pathlib import Path

from docutils import nodes
from sphinx.errors import ExtensionError

PREFIX = "notebooks/"


def load_section() -> dict:
    """The record's "notebooks" section ({} when the record or the section is missing)."""
    from ragcourse import paths  # read at call time: RAGCOURSE_RESULTS (or a test) may move the stored results

    path = Path(paths.RESULTS_DIR) / "timings.json"
    record = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    return record.get("notebooks", {})


def load_text(row: dict) -> str:
    """'a load average of 3.6 to 6.6' (1-minute averages before and after the run)."""
    low, high = sorted(round(x[0], 1) for x in (row["load_average_before"], row["load_average_after"]))
    return f"a load average of {low}" if low == high else f"a load average of {low} to {high}"


def machine_text(machine: dict) -> str:
    """'Intel(R) Xeon(R) Processor, 2 cores, 24 GiB, Python 3.11.7, measured 2026-12-04'."""
    return (f"{machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB, "
            f"Python {machine['python']}, measured {machine['date']}")


def paragraph(*parts) -> nodes.paragraph:
    """A paragraph of text and inline nodes."""
    para = nodes.paragraph()
    for part in parts:
        para += nodes.Text(part) if isinstance(part, str) else part
    return para


def box(docname: str, row: dict, section: dict) -> nodes.admonition:
    """The admonition: cost, set-up command and the notebook's download."""
    minutes, cpu = round(row["wall_s"] / 60, 1), round(row["cpu_s"] / 60, 1)
    memory, where = round(row["peak_rss_mib"] / 1024, 2), machine_text(row.get("machine", section.get("machine")))
    folder, _, _ = docname.rpartition("/")
    note = nodes.admonition(classes=["tip", "run-this-chapter"])
    note += nodes.title(text="Run this lab" if folder.endswith("/labs") else "Run this chapter")
    note += paragraph(f"Executing this notebook once took {minutes} min of wall time ({cpu} min of CPU time) "
                      f"and at most {memory} GB of memory, on {where}, at {load_text(row)}: the machine was "
                      "shared with other work, so these are upper figures for a quiet laptop. "
                      + cache_text(row, section))
    download = "../" * docname.count("/") + f"_sources/{docname}.ipynb"
    note += paragraph("Set up once, in a clone of the repository: ", nodes.literal(text=section["setup"]),
                      ". Then ", nodes.reference("", "download this notebook", refuri=download, internal=False),
                      ", place it in the clone's ", nodes.literal(text=folder + "/"), " folder and run it with ",
                      nodes.literal(text=".venv/bin/jupyter lab"), ".")
    return note


def cache_text(row: dict, section: dict) -> str:
    """What the vector cache held when the run started."""
    if row.get("cache", section.get("cache")) == "empty":
        return ("The vector cache started empty, as right after set-up: "
                "after other chapters have run, the vectors they embedded are reused and this page costs less.")
    return f"The vector cache was {section['cache']} (chapters run in book order)."


def add_box(app, doctree, docname: str) -> None:
    if not docname.startswith(PREFIX):
        return
    section = load_section()
    key = docname.removeprefix(PREFIX)
    row = section.get("pages", {}).get(key)
    if row is None:
        if key in section.get("scope", []):
            raise ExtensionError(f"{docname}: benchmarks/results/timings.json lists {key} in its notebooks "
                                 "scope but has no figures for it: run `make run-costs`")
        return
    first = doctree.next_node(nodes.section)
    if first is None:
        raise ExtensionError(f"{docname}: no section to put the 'Run this chapter' box in")
    first.insert(place(first), box(docname, row, section))


def place(section: nodes.section) -> int:
    """Right after the chapter's "In this chapter" box when it opens the chapter, else right under the title."""
    opening = section.children[1] if len(section.children) > 1 else None
    titled = isinstance(opening, nodes.Admonition) and opening.next_node(nodes.title) is not None
    return 2 if titled and opening.next_node(nodes.title).astext().startswith("In this chapter") else 1


def setup(app):
    app.connect("doctree-resolved", add_box)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
