"""Answer quality: SQuAD EM/F1, the Answerer's prompt and usage counting, evaluate_answers (no network)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from g2cons_plugins.errors import InputError
from g2cons_plugins.eval.answering import DEFAULT_PROMPT, Answerer, evaluate_answers, exact_match, f1_score


class FakeCompletions:
    """Mimics ``client.chat.completions``: answers from a question -> answer table, records every call."""

    def __init__(self, table: dict[str, str], usage: tuple[int, int] | None = (100, 3)) -> None:
        self.table = table
        self.usage = usage
        self.calls: list[dict[str, Any]] = []

    def create(self, *, model: str, messages: list[dict[str, str]], max_tokens: int, temperature: float) -> Any:
        self.calls.append({"model": model, "messages": messages, "max_tokens": max_tokens, "temperature": temperature})
        text = messages[-1]["content"]
        content = next((a for q, a in self.table.items() if q in text), "unknown")
        usage = None
        if self.usage is not None:
            usage = SimpleNamespace(prompt_tokens=self.usage[0], completion_tokens=self.usage[1])
        message = SimpleNamespace(content=f"  {content}\n")
        return SimpleNamespace(choices=[SimpleNamespace(message=message)], usage=usage)


def fake_client(table: dict[str, str], usage: tuple[int, int] | None = (100, 3)) -> Any:
    return SimpleNamespace(chat=SimpleNamespace(completions=FakeCompletions(table, usage)))


# --- EM / F1 ---------------------------------------------------------------------------------------------


def test_exact_match_normalises_case_articles_punctuation() -> None:
    assert exact_match("The Eiffel Tower.", ["eiffel tower"]) == 1.0
    assert exact_match("  an   APPLE!! ", ["Apple"]) == 1.0
    assert exact_match("Yes", ["yes"]) == 1.0
    assert exact_match("Eiffel", ["Eiffel Tower"]) == 0.0


def test_f1_partial_overlap_by_hand() -> None:
    # "marie curie paris" vs "marie curie": common 2, P = 2/3, R = 1 -> F1 = 2 * (2/3) / (5/3) = 0.8
    assert f1_score("Marie Curie, Paris", ["Marie Curie"]) == pytest.approx(0.8)
    # "eiffel tower in paris" vs "eiffel tower": P = 1/2, R = 1 -> F1 = 2/3
    assert f1_score("the Eiffel Tower in Paris", ["Eiffel Tower"]) == pytest.approx(2 / 3)
    # repeated tokens count once per match (bag overlap): "paris paris" vs "paris": P = 1/2, R = 1 -> 2/3
    assert f1_score("Paris Paris", ["Paris"]) == pytest.approx(2 / 3)
    assert f1_score("London", ["Paris"]) == 0.0


def test_max_over_gold_aliases() -> None:
    answers = ["Pierre Curie", "Marie Sklodowska Curie", "Marie Curie"]
    assert exact_match("marie curie", answers) == 1.0
    # best alias is "Marie Sklodowska Curie": common 2, P = 1, R = 2/3 -> 0.8 (beats 0.5 vs "Pierre Curie")
    assert f1_score("Marie Curie", answers[:2]) == pytest.approx(0.8)


def test_empty_prediction_scores_zero() -> None:
    assert exact_match("", ["Paris"]) == 0.0
    assert f1_score("", ["Paris"]) == 0.0
    assert f1_score("the", ["Paris"]) == 0.0  # normalises to empty
    assert exact_match("Paris", []) == 0.0
    assert f1_score("Paris", []) == 0.0


# --- Answerer --------------------------------------------------------------------------------------------


def test_answerer_sends_context_and_question_and_counts_usage() -> None:
    client = fake_client({"Where was Marie Curie born?": "Warsaw"})
    answerer = Answerer(model="m", client=client, max_tokens=16, temperature=0.0)
    context = "Marie Curie was born in Warsaw."
    assert answerer.answer("Where was Marie Curie born?", context) == "Warsaw"
    call = client.chat.completions.calls[0]
    assert call["model"] == "m" and call["max_tokens"] == 16 and call["temperature"] == 0.0
    content = call["messages"][-1]["content"]
    assert context in content and "Where was Marie Curie born?" in content
    assert content == DEFAULT_PROMPT.format(context=context, question="Where was Marie Curie born?")
    assert answerer.usage == {"calls": 1, "input_tokens": 100, "output_tokens": 3}
    answerer.answer("Other question?", "ctx")
    assert answerer.usage == {"calls": 2, "input_tokens": 200, "output_tokens": 6}


def test_answerer_without_usage_counts_calls_only() -> None:
    answerer = Answerer(client=fake_client({}, usage=None))
    assert answerer.answer("q?", "c") == "unknown"
    assert answerer.usage == {"calls": 1, "input_tokens": 0, "output_tokens": 0}


def test_usage_property_is_a_copy() -> None:
    answerer = Answerer(client=fake_client({}))
    answerer.usage["calls"] = 99
    assert answerer.usage["calls"] == 0


def test_custom_prompt_and_bad_prompt() -> None:
    client = fake_client({})
    Answerer(client=client, prompt="Q: {question}\nC: {context}\nA:").answer("why?", "because")
    assert client.chat.completions.calls[0]["messages"][-1]["content"] == "Q: why?\nC: because\nA:"
    with pytest.raises(InputError, match="placeholders"):
        Answerer(client=client, prompt="Answer: {question}")


def test_missing_env_raises_input_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    answerer = Answerer()  # lazy: constructing needs no credentials
    with pytest.raises(InputError, match="OPENAI_API_KEY") as info:
        answerer.answer("q?", "c")
    assert "OPENAI_BASE_URL" in str(info.value)


def test_base_url_alone_is_enough_to_build_a_client(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    client = Answerer().client  # constructing the client makes no request
    assert str(client.base_url).startswith("http://127.0.0.1:9/v1")


# --- evaluate_answers ------------------------------------------------------------------------------------


def test_evaluate_answers_expected_scores() -> None:
    table = {"Q1": "Warsaw", "Q2": "Marie Curie, Paris", "Q3": "London"}
    questions = [
        {"question": "Q1", "answers": ["warsaw", "Warszawa"]},  # EM 1, F1 1
        {"question": "Q2", "answers": ["Marie Curie"]},  # EM 0, F1 0.8
        {"question": "Q3", "answers": ["Paris"]},  # EM 0, F1 0
    ]
    contexts = ["ctx one", "ctx two", "ctx three"]
    client = fake_client(table, usage=(50, 2))
    answerer = Answerer(client=client)
    answerer.answer("warm-up", "spent before the evaluation")
    result = evaluate_answers(answerer, questions, contexts)
    assert result == {"em": 33.33, "f1": 60.0, "n": 3, "calls": 3, "input_tokens": 150, "output_tokens": 6}
    sent = [c["messages"][-1]["content"] for c in client.chat.completions.calls[1:]]
    assert all(ctx in s for ctx, s in zip(contexts, sent, strict=True))


def test_evaluate_answers_input_errors() -> None:
    answerer = Answerer(client=fake_client({}))
    with pytest.raises(InputError, match="aligned"):
        evaluate_answers(answerer, [{"question": "q", "answers": ["a"]}], [])
    with pytest.raises(InputError, match="no questions"):
        evaluate_answers(answerer, [], [])
    with pytest.raises(InputError, match="question 1"):
        evaluate_answers(answerer, [{"question": "q"}], ["c"])


def test_eval_cli_reports_em_f1_per_method(context_answerer: None, tmp_path: Any) -> None:
    """``g2cons eval --answer-model``: every method's context goes to the answerer; a fake that answers from the
    context (the gold answer when the context holds it) scores EM = that method's CR at the answer budget."""
    import json
    from pathlib import Path

    from g2cons_plugins.cli import main

    root = Path(__file__).resolve().parents[2] / "examples" / "data"
    out = tmp_path / "r.json"
    rc = main(
        ["eval", "--corpus", str(root / "musique_excerpt_corpus.jsonl"), "--questions",
         str(root / "musique_excerpt_questions.jsonl"), "--methods", "dense,concept", "--budgets", "500,1000",
         "--embedder", "hash", "--limit", "4", "--answer-model", "fake-model", "--out", str(out), "--quiet"]
    )  # fmt: skip
    assert rc == 0
    r = json.loads(out.read_text(encoding="utf-8"))
    assert r["answers"]["model"] == "fake-model" and r["answers"]["budget"] == 500
    cr = {(x["method"], x["budget"]): x["context_recall"] for x in r["results"]}
    for row in r["answers"]["rows"]:
        assert row["em"] == cr[(row["method"], 500)]
        assert row["calls"] == 4 and row["input_tokens"] == 40
