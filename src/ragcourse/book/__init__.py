"""Book plumbing: the sources' figures, the one recorded timing run, and the exercises' public checks."""
