"""The ``ragcourse`` command line (`main`) and ``ragcourse eval``'s folder reader and report."""

from .main import main, parser

__all__ = ["main", "parser"]
