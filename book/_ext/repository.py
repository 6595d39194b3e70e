"""The repository button and the launch buttons follow one setting, `repository.url` in book/_config.yml.

While it is empty (the project has no public address yet) both stay off; once it is set, the page header
links to the repository and each notebook page offers to launch it on Binder (mybinder.org builds the
repository's environment.yml, which installs the lock with PyTorch's CPU build).
"""

from __future__ import annotations

BINDER = "https://mybinder.org"


def buttons(options: dict) -> dict:
    """The theme options with the buttons on exactly when the repository URL is set.

    >>> buttons({"repository_url": ""})["use_repository_button"]
    False
    >>> buttons({"repository_url": "https://x.org/r"})["launch_buttons"]["binderhub_url"]
    'https://mybinder.org'
    """
    url = (options.get("repository_url") or "").strip()
    launch = dict(options.get("launch_buttons") or {}, binderhub_url=BINDER if url else "")
    return dict(options, repository_url=url, use_repository_button=bool(url), launch_buttons=launch)


def _configure(app, config) -> None:
    config.html_theme_options = buttons(dict(config.html_theme_options or {}))


def setup(app):
    app.connect("config-inited", _configure, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
