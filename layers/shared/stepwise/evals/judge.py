"""Rubrics graded by a judge model from the configuration: a verdict and the judge's reason, recorded.

The judge is asked for one JSON object, `{"pass": true|false, "reason": "..."}`, read leniently (code
fences, prose around it); a reply without a readable verdict fails the check and says so, as does a
judge that cannot be reached: a grade that was not given is never a pass.
"""

from __future__ import annotations

from stepwise.errors import StepwiseError
from stepwise.evals.checks import CheckResult
from stepwise.llm.base import ChatModel
from stepwise.models.messages import ChatMessage, ChatRequest
from stepwise.protocols.lenient_json import find_objects, load_lenient

JUDGE_INSTRUCTIONS = (
    "You grade an AI assistant's answer against a rubric. Read the question, the answer and the rubric, "
    'then reply with one JSON object and nothing else: {"pass": true or false, "reason": "one sentence"}.'
)
_MAX_REASON_CHARS = 500


def judge_request(rubric: str, question: str, answer: str) -> ChatRequest:
    """What the judge is asked for one answer."""
    prompt = f"Question:\n{question}\n\nAnswer:\n{answer}\n\nRubric:\n{rubric}"
    return ChatRequest(
        messages=[ChatMessage(role="system", content=JUDGE_INSTRUCTIONS), ChatMessage(role="user", content=prompt)],
        temperature=0,
    )


def _verdict(text: str) -> tuple[bool, str] | None:
    candidates = [load_lenient(text), *(span.value for span in find_objects(text))]
    for candidate in candidates:
        if isinstance(candidate, dict) and isinstance(candidate.get("pass"), bool):
            reason = candidate.get("reason")
            return candidate["pass"], (reason if isinstance(reason, str) else "")[:_MAX_REASON_CHARS]
    return None


def grade(model: ChatModel, rubric: str, question: str, answer: str) -> CheckResult:
    """The judge's verdict on `answer`, with its reason (kept whether it passed or not)."""
    try:
        return grade_reached(model, rubric, question, answer)
    except StepwiseError as exc:
        return CheckResult(check="rubric", passed=False, reason=f"the judge could not grade: {type(exc).__name__}")


def grade_reached(model: ChatModel, rubric: str, question: str, answer: str) -> CheckResult:
    """As `grade`, but a judge that cannot be reached raises its `StepwiseError`, for callers that record
    an eval that could not run apart from one that failed (online evals)."""
    completion = model.complete(judge_request(rubric, question, answer))
    verdict = _verdict(completion.content)
    if verdict is None:
        return CheckResult(
            check="rubric", passed=False, reason='the judge gave no {"pass": ..., "reason": ...} verdict'
        )
    passed, reason = verdict
    return CheckResult(check="rubric", passed=passed, reason=reason or ("passed" if passed else "failed"))
