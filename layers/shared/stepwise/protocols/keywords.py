"""ReAct keyword labels (``Thought:``, ``Action:``, ``Action Input:``, ``Final Answer:``, ``Observation:``).

Models write them in many spellings: any case, bold or bulleted, numbered (``Action 1:``), with a
full-width colon (U+FF1A) or in Chinese (``思考``, ``动作输入``, ``最终答案``); LlamaIndex writes the final
answer as ``Answer:``, LangChain's (and langchaingo's) conversational agents as ``AI:`` after "Do I need to use a
tool? No", Haystack's agents the action as ``Tool:`` and ``Tool Input:`` (a ``Tool:`` label
counts only when its ``Tool Input:`` follows, as Haystack reads it). They are recognised only at
the start of a line, so the same words inside prose are left alone.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

KeywordKind = Literal["thought", "action", "action_input", "final_answer", "observation"]

# Longer spellings come first: "Action Input" must win over "Action", "动作输入" over "动作".
_SPELLINGS: list[tuple[KeywordKind, str]] = [
    ("action_input", r"action[ _-]?input|tool[ _-]?input|动作输入|行动输入"),
    # A bare "Answer:" is LlamaIndex's final-answer keyword, "AI:" that of LangChain's conversational agents.
    ("final_answer", r"final[ _-]?answer|最终答案|最终回答|answer|答案|ai"),
    ("thought", r"thoughts?|thinking|思考|想法"),
    ("action", r"action|(?P<tool>tool)|动作|行动"),
    ("observation", r"observation|观察结果|观察"),
]
# Every run is possessive (`*+`): a bullet run and the `*_` run after it both read `*`, as the spaces before a
# number and the `*_ \t` run after it both read spaces, and each way of splitting one run was tried (a line of
# 8,000 `*` cost 6 s, the square of its length). No run gives back what the next part could use: a spelling
# starts with a letter, the colon is in none of them.
_LABEL = re.compile(
    r"^[ \t]*+(?:[-*>#]++[ \t]*+)?[*_]*+(?:"
    + "|".join(f"(?P<{kind}>{pattern})" for kind, pattern in _SPELLINGS)
    + r")[ \t]*+\d*+[*_ \t]*+[:\uff1a][*_]*+[ \t]*+",
    re.IGNORECASE | re.MULTILINE,
)
_TRAILING_FENCE_OPENER = re.compile(r"```[\w+.-]*\s*$")


class KeywordHit(NamedTuple):
    """One label in a text: its kind, where the label starts and where its content starts."""

    kind: KeywordKind
    start: int
    end: int


def find_keywords(text: str) -> list[KeywordHit]:
    """Every keyword label of the text, in order."""
    hits: list[KeywordHit] = []
    tool_labels: set[int] = set()
    for match in _LABEL.finditer(text):
        kind = next(kind for kind, _ in _SPELLINGS if match.group(kind) is not None)
        if match.group("tool") is not None:
            tool_labels.add(len(hits))
        hits.append(KeywordHit(kind, match.start(), match.end()))
    return [
        hit
        for index, hit in enumerate(hits)
        if index not in tool_labels or (index + 1 < len(hits) and hits[index + 1].kind == "action_input")
    ]


def section(text: str, hits: list[KeywordHit], index: int) -> str:
    """The content of the label ``hits[index]``: up to the next label, stripped."""
    end = hits[index + 1].start if index + 1 < len(hits) else len(text)
    return text[hits[index].end : end].strip()


def first_after(hits: list[KeywordHit], kind: KeywordKind, position: int) -> KeywordHit | None:
    """The first label of a kind that starts at or after a position."""
    return next((hit for hit in hits if hit.kind == kind and hit.start >= position), None)


def clean_thought(text: str) -> str:
    """Reasoning written before an action: labels and a dangling code-fence opener removed."""
    without_fence = _TRAILING_FENCE_OPENER.sub("", text.rstrip())
    return _LABEL.sub("", without_fence).strip()
