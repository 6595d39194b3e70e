"""Chapter 7's hand-written answers to its opening question and a stand-in generator, shared by lesson and lab.

Each answer shows one behaviour the checker must tell apart; `RecordingGenerator` shows that the gate calls no
model on NO ANSWER. Leaves out: real generation (`ragcourse.models`) and the checks themselves (`citations`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..citations import REFUSAL

#: Six answers to "How do I write a list?" (sources [1]-[4]), one per behaviour; the lab adds a made-up one.
HAND_WRITTEN = {
    "good": "A list must start a new paragraph, so it needs a blank line before it [1]. "
            "Nested lists also need blank lines before and after them [4].",
    "source does not exist": "A list must start a new paragraph, after a blank line [1][7].",
    "uncited claim": "A list must appear after a blank line [1]. Definition lists also need a colon after every term.",
    "invented link and arXiv id": "The rule is in the primer at "
                                  "https://docutils.sourceforge.io/docs/user/rst/quickstart.html#lists [1], "
                                  "and its rationale in arXiv:0704.06432 [2].",
    "refusal": REFUSAL,
    "wrong but cited": "Lists need two blank lines before them [1].",
}
#: A sentence its source barely shares a word with.
MADE_UP = "Lists are drawn in bold by the LaTeX writer [1]."


@dataclass
class RecordingGenerator:
    """A stand-in generator: it records every prompt it is given and always refuses.

    >>> fake = RecordingGenerator()
    >>> fake("a prompt") == REFUSAL, fake.calls
    (True, ['a prompt'])
    """

    calls: list[str] = field(default_factory=list)

    def __call__(self, prompt: str) -> str:
        self.calls.append(prompt)
        return REFUSAL
