"""Answer generation and answer-quality metrics (EM / F1) as ``shared/specs/evaluation.md`` defines them.

- Normalisation (SQuAD): lowercase; drop punctuation; drop the articles a/an/the; collapse whitespace
  (``evaluation.normalize_answer``). HotpotQA-style yes/no answers compare after the same normalisation.
- EM: 1 when the normalised prediction equals a normalised gold answer, else 0; max over gold aliases.
- F1: token-level F1 over whitespace tokens of the normalised strings (bag-of-tokens overlap, as in the SQuAD
  script); max over gold aliases. An empty prediction scores 0 against any non-empty gold answer.

``Answerer`` asks an OpenAI-compatible chat completions endpoint for a short answer span given a retrieved
context and counts the calls and tokens it spends. The spec states no answering prompt, so ``DEFAULT_PROMPT``
is a short extractive one (answer span only, no explanation), matching how EM/F1 are scored.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..errors import InputError
from .evaluation import normalize_answer

DEFAULT_PROMPT = (
    "Answer the question using the context below. Reply with the shortest answer span only "
    "(a name, date, number, short phrase, or yes/no), with no explanation.\n\n"
    "Context:\n{context}\n\n"
    "Question: {question}\n"
    "Answer:"
)


def _exact(prediction: str, gold: str) -> float:
    return float(normalize_answer(prediction) == normalize_answer(gold))


def _f1(prediction: str, gold: str) -> float:
    pred = normalize_answer(prediction).split()
    ref = normalize_answer(gold).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, answers: Sequence[str]) -> float:
    """SQuAD exact match of ``prediction`` against the best gold alias (0.0 when ``answers`` is empty)."""
    return max((_exact(prediction, a) for a in answers), default=0.0)


def f1_score(prediction: str, answers: Sequence[str]) -> float:
    """SQuAD token F1 of ``prediction`` against the best gold alias (0.0 when ``answers`` is empty)."""
    return max((_f1(prediction, a) for a in answers), default=0.0)


class Answerer:
    """Short-answer generation with an OpenAI-compatible chat completions client, counting usage.

    ``client`` is any object with ``client.chat.completions.create(model=, messages=, max_tokens=, temperature=)``;
    when None, ``openai.OpenAI()`` is created on first use (it reads ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``;
    with only ``OPENAI_BASE_URL`` set, a placeholder key is passed, for local servers that need none).
    ``prompt`` is a ``str.format`` template with ``{context}`` and ``{question}`` placeholders.
    """

    def __init__(
        self,
        model: str = "gpt-4o-mini",
        client: Any | None = None,
        max_tokens: int = 32,
        temperature: float = 0.0,
        prompt: str = DEFAULT_PROMPT,
    ) -> None:
        if "{context}" not in prompt or "{question}" not in prompt:
            raise InputError("prompt must contain the placeholders {context} and {question}")
        if max_tokens < 1:
            raise InputError(f"max_tokens must be >= 1, got {max_tokens}")
        self.model = model
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.prompt = prompt
        self._client = client
        self._usage = {"calls": 0, "input_tokens": 0, "output_tokens": 0}

    @property
    def client(self) -> Any:
        if self._client is None:
            if not os.environ.get("OPENAI_API_KEY") and not os.environ.get("OPENAI_BASE_URL"):
                raise InputError(
                    "answer generation needs an OpenAI-compatible endpoint: set OPENAI_API_KEY "
                    "(and/or OPENAI_BASE_URL for a local or other compatible server)"
                )
            try:
                import openai
            except ImportError:
                raise InputError("answer generation needs the 'openai' package: pip install openai") from None
            # a local server behind OPENAI_BASE_URL often needs no key, but the client insists on one
            self._client = openai.OpenAI(api_key=os.environ.get("OPENAI_API_KEY") or "unused")
        return self._client

    @property
    def usage(self) -> dict[str, int]:
        """Calls, input (prompt) tokens and output (completion) tokens spent so far."""
        return dict(self._usage)

    def answer(self, question: str, context: str) -> str:
        """Return the model's short answer (stripped) to ``question`` given ``context``."""
        messages = [{"role": "user", "content": self.prompt.format(context=context, question=question)}]
        response = self.client.chat.completions.create(
            model=self.model, messages=messages, max_tokens=self.max_tokens, temperature=self.temperature
        )
        self._usage["calls"] += 1
        usage = getattr(response, "usage", None)
        if usage is not None:
            self._usage["input_tokens"] += int(getattr(usage, "prompt_tokens", 0) or 0)
            self._usage["output_tokens"] += int(getattr(usage, "completion_tokens", 0) or 0)
        content = response.choices[0].message.content if response.choices else None
        return (content or "").strip()


def evaluate_answers(
    answerer: Answerer, questions: Sequence[dict[str, Any]], contexts: Sequence[str]
) -> dict[str, Any]:
    """Answer every question from its aligned context and score it.

    Returns ``{"em", "f1"}`` as percentages rounded to 2 decimals, ``"n"`` questions, and the ``calls``,
    ``input_tokens`` and ``output_tokens`` this evaluation spent.
    """
    if len(questions) != len(contexts):
        raise InputError(f"{len(questions)} questions but {len(contexts)} contexts; they must be aligned")
    if not questions:
        raise InputError("no questions to evaluate")
    before = answerer.usage
    em = f1 = 0.0
    for n, q in enumerate(questions, 1):
        if not q.get("question") or not q.get("answers"):
            raise InputError(f"question {n} lacks 'question' or 'answers'")
        prediction = answerer.answer(q["question"], contexts[n - 1])
        em += exact_match(prediction, q["answers"])
        f1 += f1_score(prediction, q["answers"])
    after = answerer.usage
    result: dict[str, Any] = {
        "em": round(100 * em / len(questions), 2),
        "f1": round(100 * f1 / len(questions), 2),
        "n": len(questions),
    }
    result.update({k: after[k] - before[k] for k in after})
    return result
