"""Pages without thebe's scripts, and with a colour mode the theme accepts on a first visit.

Launch buttons and thebe are off (`launch_buttons: thebe: false`), yet sphinx-thebe adds its
configuration script to every page twice, and the second `const THEBE_JS_URL` is a SyntaxError in
the browser console; the pages keep no thebe script at all. pydata-sphinx-theme falls back to an
empty colour mode when the reader has none stored ("Got invalid theme mode"); `auto` follows the system.
"""

from __future__ import annotations


def _is_thebe(asset) -> bool:
    name = str(getattr(asset, "filename", asset) or "")
    body = str(getattr(asset, "attributes", {}).get("body", ""))
    return "thebe" in name.lower() or "THEBE_JS_URL" in body


def _page(app, pagename, templatename, context, doctree) -> None:
    for key in ("script_files", "css_files"):
        if key in context:
            context[key] = [asset for asset in context[key] if not _is_thebe(asset)]
    context.setdefault("default_mode", "auto")  # read by pydata-sphinx-theme's layout.html


def setup(app):
    app.connect("html-page-context", _page, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
