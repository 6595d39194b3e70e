"""The appendix "What the sources claimed, checked" includes every chapter's claims file, in order.

book/sources-checked.md holds the line MARKER; when Sphinx reads that page, the line becomes one
`{include}` of each book/claims/*.md (01.md ... 11.md, a2.md), so a chapter's engineer adds a claims file
without editing the appendix. Each file is noted as a dependency: changing it rebuilds the page.
"""

from __future__ import annotations

from pathlib import Path

MARKER = "% claims: every book/claims/*.md is included here (book/_ext/claims.py)"


def include_lines(folder: Path) -> str:
    """MyST `{include}` blocks for every claims file of `folder`, chapters in order and appendices after."""
    files = sorted(folder.glob("*.md"), key=lambda p: (not p.stem[:2].isdigit(), p.stem))
    return "\n\n".join(f"```{{include}} claims/{p.name}\n```" for p in files)


def insert_claims(app, docname: str, source: list[str]) -> None:
    if MARKER not in source[0]:
        return
    folder = Path(app.srcdir) / "claims"
    for path in sorted(folder.glob("*.md")):
        app.env.note_dependency(str(path))
    source[0] = source[0].replace(MARKER, include_lines(folder))


def setup(app):
    app.connect("source-read", insert_claims)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
