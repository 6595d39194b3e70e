"""The instructor's kit: the student edition, the grader and the hidden checks (never shipped to students)."""
