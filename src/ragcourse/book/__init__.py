"""Book plumbing: the sources' figures, the one recorded timing run, the exercises' public checks, and
chapter 8's broken folder."""
