"""`python -m ragcourse ...` is the `ragcourse` command."""

from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
