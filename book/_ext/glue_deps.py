"""A page that pastes glue from another notebook (`path::key`) is rebuilt when that notebook changes.

myst-nb resolves such a paste after reading, from the other notebook's stored glue, but does not tell
Sphinx about the dependency: an incremental `make book` would keep a lesson's old numbers after its
lab changed. Noting the other notebook as a dependency makes Sphinx re-read the page.
"""

from __future__ import annotations

from myst_nb.ext.glue.utils import PendingGlueReference


def note_glue_sources(app, doctree) -> None:
    """Note every notebook this page pastes glue from as one of its dependencies."""
    env = app.env
    for node in doctree.findall(PendingGlueReference):
        source = env.doc2path(node.refdoc)
        env.note_dependency(str(source))


def setup(app):
    app.connect("doctree-read", note_glue_sources)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
