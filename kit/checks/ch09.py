"""Hidden checks for chapter 9 (document types). Never shipped with the student edition."""

from __future__ import annotations

from kit.checks.compare import Partly, by_count, given, integer, items, keyed, misses, reference
from kit.hidden import check


@check("9.1", points=1)
def predicted_before_measuring(ns):
    """A prediction was written: a direction among up, down and same, and a sentence of reasoning (completion)."""
    prediction = given(ns, "prediction_9_1")
    assert isinstance(prediction, dict), "prediction_9_1 must be a dict with 'direction' and 'why'"
    assert prediction.get("direction") in ("up", "down", "same"), "'direction' must be 'up', 'down' or 'same'"
    why = prediction.get("why")
    assert isinstance(why, str) and len(why.split()) >= 4, "'why' needs a sentence of reasoning"


#: Replies and paragraph counts the notebook never shows: one per rule of the statement, and edges.
UNSEEN = [
    ("3, 6", 8), ("Answer: paragraphs 2 and 5 begin new topics.", 7), ("[4] [9]", 10), ("3, 4, 5", 9),
    ("5, 4, 3, 3", 12), ("6; 2", 6), ("Paragraphs 1, 4 & 7", 10),  # usable
    ("7", 5), ("12, 15", 10), ("none of them", 6), ("1", 6), ("", 4),  # out of range, no number, no break
    ("2, 3, 4, 5", 5), ("2", 2), ("1, 2, 3, 4", 9), ("[2] [3] [4] [5]", 9), ("2, 3, 4", 9),  # every, counting
    ("Paragraph 4 talks about rivers.", 8), ("3. The city lies on a river.", 9),  # prose
    ("Paragraph 3 is about the war, paragraph 6 about the peace.", 9),
]


@check("9.2", points=3, forbids=("parse_breaks",))
def usable_breaks_on_unseen_replies(ns):
    """usable_breaks(answer, n) equals parse_breaks(answer, n).breaks on 20 replies the notebook never shows:
    7 usable ones (repeats, order, allowed words), 5 without a break, 8 that only the rules reject (prose,
    every paragraph, counting from 1 or 2). All right: full; 16 or more: two thirds; 13 or more: one third
    (keeping every number in 2..n, ignoring the rules, gets 12: nothing)."""
    from ragcourse.genre_chunking import parse_breaks

    fn = given(ns, "usable_breaks")
    assert callable(fn), "define usable_breaks(answer, n) -> tuple"
    with reference("the package's parse_breaks"):
        expected = [parse_breaks(answer, n).breaks for answer, n in UNSEEN]
    right = len(UNSEEN) - misses(fn, UNSEEN, expected,
                                 lambda got, want: tuple(items(got, "the breaks")) == tuple(want))
    return by_count(right, len(UNSEEN), (13, 16),
                    f"{right} of {len(UNSEEN)} unseen replies right: apply every rule, in the order given")


@check("9.3", points=2)
def needles_destroyed_at_the_exercise_budget(ns):
    """answer_9_3 == {genre: answers_destroyed by strategy A at TARGET_9_3}, recomputed from the package."""
    from ragcourse.chunking import chunk_corpus
    from ragcourse.evaluation import answers_destroyed
    from ragcourse.genres import GENRES, load_genre
    from ragcourse.groundtruth import load_genre_questions

    answer, target = keyed(given(ns, "answer_9_3"), "answer_9_3"), int(ns["TARGET_9_3"])
    assert sorted(map(str, answer)) == sorted(GENRES), f"answer_9_3 needs one count per genre {GENRES}"
    right = 0
    for genre in GENRES:
        with reference("the needles destroyed per genre"):
            docs = load_genre(genre)
            needles = [q.needle for q in load_genre_questions(genre, corpus=docs)]
            expected = len(answers_destroyed(chunk_corpus(docs, "A", target=target), needles))
        right += integer(answer[genre], f"answer_9_3[{genre!r}]") == expected
    if right == len(GENRES):
        return None
    why = "check the strategy (A), the budget (TARGET_9_3) and that you count needles, not chunks"
    assert right >= 2, why
    return Partly(1 / 2, f"{len(GENRES) - right} of {len(GENRES)} genres wrong: {why}")
