"""Print the built corpus's table of contents: each document's id and title, then its headings, indented by level.

Nothing else of the text is printed: this is all the writer of the topic-first question set
(data/question_sets/topic-first.jsonl) saw before writing its questions. Headings inside fenced code are skipped.

Run: `python scripts/corpus_headings.py`.
"""

from __future__ import annotations

import re

from ragcourse.corpus import load_corpus

FENCE = re.compile(r"^ {0,3}(```|~~~)")
HEADING = re.compile(r"^(#{1,6}) (.+)$")


def headings(text: str) -> list[tuple[int, str]]:
    """(level, title) of each Markdown heading line outside fenced code.

    >>> headings("# T\\n```\\n## not\\n```\\n## A\\ntext\\n### B")
    [(1, 'T'), (2, 'A'), (3, 'B')]
    """
    out, inside = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            inside = not inside
        elif not inside and (m := HEADING.match(line)):
            out.append((len(m.group(1)), m.group(2).strip()))
    return out


def main() -> None:
    for doc in load_corpus():
        print(f"[{doc.id}] {doc.title}")
        for level, title in headings(doc.text):
            print("  " * (level - 1) + title)
        print()


if __name__ == "__main__":
    main()
