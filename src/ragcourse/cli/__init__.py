"""The ``ragcourse`` command line (`main`) and ``ragcourse eval``'s folder reader and report."""

from .main import main as main  # the console script's entry point (pyproject: ragcourse = "ragcourse.cli:main")
