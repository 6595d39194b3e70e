"""`python -m ragcourse.cli ...`: the same as `ragcourse ...`."""

from .main import main

raise SystemExit(main())
