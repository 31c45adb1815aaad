"""The built-in claim classifier: clear statements of each category, personal beats technical,
and the shape of a decision. Accuracy is measured by ``benchmarks/classify.py``, not here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lsp_memory.model import CATEGORIES
from lsp_memory.services.memory.classify import (
    PERSONAL,
    Classifier,
    Model,
    builtin_model,
    features,
    normalise,
)

DATA = Path(__file__).parents[1] / "data" / "categories.jsonl"

# Statements written for these tests, none of them in the labelled dev set.
CLEAR = [
    ("identity", "My name is Oskar and I'm 41 years old."),
    ("identity", "I was born in Accra."),
    ("preference", "I prefer green tea to coffee."),
    ("preference", "User likes quiet restaurants."),
    ("relationship", "My sister Clara is a vet in Bristol."),
    ("relationship", "Noor is my manager."),
    ("emotional", "I feel anxious before every exam."),
    ("emotional", "I'm so frustrated with the council."),
    ("project-active", "I'm currently building a treehouse for the kids this month."),
    ("project-active", "Right now I'm working on the quarterly budget review."),
    ("goal", "I want to learn Portuguese before I turn 50."),
    ("goal", "My goal is to swim a mile without stopping."),
    ("constraint", "I'm allergic to wasps."),
    ("constraint", "I can't travel on weekdays; my budget is £400."),
    ("technical", "The billing service is written in Rust and deployed on AWS."),
    ("technical", "Our repo uses pytest and ruff in CI."),
]


@pytest.mark.parametrize(("category", "text"), CLEAR)
def test_clear_statements_get_their_category(category: str, text: str) -> None:
    assert builtin_model().decide(text).category == category


# The category guide's own examples: terse notes, most in the third person or without a
# subject. None is in the labelled set; the model is not trained on them.
GUIDE = [
    ("identity", "User's name is Chris"),
    ("identity", "User lives in Tonbridge"),
    ("identity", "User runs Hadley Bricks"),
    ("preference", "User prefers concise responses"),
    ("preference", "User likes detailed specs"),
    ("relationship", "Abby is user's wife"),
    ("relationship", "Max is user's son"),
    ("emotional", "User stressed about deadline"),
    ("emotional", "User excited about Japan trip"),
    ("project-active", "Working on Discord bot"),
    ("project-active", "Building eBay integration"),
    ("goal", "Planning Japan trip April 2026"),
    ("goal", "Wants to launch by Q2"),
    ("constraint", "Budget is £10k"),
    ("constraint", "Deadline is Friday"),
    ("technical", "Auth uses JWT tokens"),
    ("technical", "Database is Supabase"),
    ("technical", "Fixed race condition in cache"),
]


@pytest.mark.parametrize(("category", "text"), GUIDE)
def test_the_category_guide_s_examples_get_their_category(category: str, text: str) -> None:
    assert Classifier().classify(text).category == category


def test_every_category_has_clear_statements_here() -> None:
    assert {category for category, _ in CLEAR} == set(CATEGORIES)


@pytest.mark.parametrize("text", [t for _, t in CLEAR] + ["", "?", "x" * 5000, "🙂 ok"])
def test_a_decision_has_a_confidence_and_another_runner_up(text: str) -> None:
    decision = builtin_model().decide(text)
    assert decision.category in CATEGORIES and decision.runner_up in CATEGORIES
    assert decision.runner_up != decision.category
    assert 0.0 <= decision.confidence <= 1.0


def test_hate_is_a_preference_and_fear_is_emotional() -> None:
    """The documented rule for the near miss: a like or dislike of a thing is a preference,
    a feeling it causes is emotional."""
    assert builtin_model().decide("I hate flying").category == "preference"
    assert builtin_model().decide("Flying makes me anxious").category == "emotional"


def _model(technical: float, personal: float) -> Model:
    """A model that scores ``technical`` and ``goal`` from one feature, others zero."""
    weights = [0.0] * len(CATEGORIES)
    weights[CATEGORIES.index("technical")] = technical
    weights[CATEGORIES.index("goal")] = personal
    return Model(CATEGORIES, [0.0] * len(CATEGORIES), {"w:x": weights})


def test_personal_beats_technical_when_in_doubt() -> None:
    close = _model(technical=3.0, personal=2.6).decide("x")
    assert close.category == "goal" and close.runner_up == "technical"
    clear = _model(technical=3.0, personal=1.0).decide("x")
    assert clear.category == "technical" and clear.runner_up == "goal"


def test_personal_beats_technical_on_a_real_statement() -> None:
    decision = builtin_model().decide("I want to move our servers to Kubernetes next year.")
    assert decision.category in PERSONAL


def test_contractions_are_spelled_out() -> None:
    assert normalise("I’m sure I can't, I've tried") == "i am sure i can not, i have tried"
    assert "k:constraint:cannot" in features("I cannot eat eggs")
    assert "k:constraint:cannot" in features("I can't eat eggs")


def test_the_shipped_model_knows_every_category() -> None:
    model = builtin_model()
    assert model.categories == CATEGORIES
    assert all(len(w) == len(CATEGORIES) for w in model.weights.values())


def test_the_dev_set_is_balanced_with_a_held_out_split() -> None:
    records = [json.loads(line) for line in DATA.read_text("utf-8").splitlines()]
    assert len(records) >= 240
    for category in CATEGORIES:
        mine = [r for r in records if r["category"] == category]
        held_out = [r for r in mine if r["split"] == "test"]
        assert len(mine) >= 30 and 0.25 <= len(held_out) / len(mine) <= 0.35
    assert len({r["text"] for r in records}) == len(records)


def test_the_classifier_without_a_command_is_the_model() -> None:
    texts = [t for _, t in CLEAR]
    assert Classifier().classify_all(texts) == [builtin_model().decide(t) for t in texts]
    assert Classifier().classify_all([]) == []
