"""No cell of a released notebook states the outcome of an experiment a graded prediction is about.

A student reads the notebook before running it. A cell that says what an experiment shows hands
over the answer of the prediction written before it, and so does one placed after the
experiment's cell: it is read first all the same. So every cell but the run cell itself (whose
output is the outcome) is read here, passage by passage (a paragraph, a list item, a line of
code), for the words that state each graded answer. The answers are the oracles'
(solutions/psN/exact.py: ps1's flip horizon, ps2's BREAK_IT_KL, ps3's EXPERIMENT_ANSWERS); the
words are this test's lists. A prediction's options, written in quotes in the prompt, offer an
answer without stating it and are left out.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import nbformat
import pytest

from rlcourse.course.directory import Course
from rlcourse.course.release import grade_id_of
from rlcourse.course.solutions import load_solution

ROOT = Path(__file__).resolve().parents[2]
COURSE = Course(ROOT)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What one graded prediction's answer says, as prose would say it."""

    prediction: str
    run_cell: str
    """The cell whose run shows the outcome."""
    words: tuple[str, ...]
    """Phrases that state the answer (lower case; `λ` stands for lambda however it is written)."""
    about: tuple[str, ...] = ()
    """Names of what the answer is about, one of which a passage must name as well; empty when
    the words state the answer on their own."""


# Words that state a variant's band in ps2's break-it lab (its mean approximate KL per update over
# the standard run's), and the words that name each variant.
BAND_WORDS = {
    "much larger": ("much larger", "order of magnitude", "tens of times", "far larger", "runs away",
                    "run away", "explode", "blows up"),
    "larger": ("larger", "several times", "lands between", "land between", "between the standard run"),
    "about the same": ("about the same", "hardly", "barely", "look like the standard", "looks like the standard",
                       "same as the standard", "as the standard run's", "does not change the kl", "unchanged",
                       "no larger", "cancels", "does not show", "doesn't show", "not show in"),
    "smaller": ("smaller", "moves less", "move less", "less far", "lower kl", "below the standard"),
}
VARIANT_NAMES = {
    "no clip": ("no clip", "without the clip at all", "no clip at all", "unclipped"),
    "clip without min": ("clip without the min", "clip without min", "clip-without-min", "clip_only", "clip-only"),
    "lambda = 1": ("λ = 1", "λ=1", "lam=1"),
    "K = 1": ("k = 1", "epochs=1", "one pass over each rollout", "one epoch"),
    "no entropy": ("no entropy", "no-entropy", "c₂ = 0", "c2=0"),
    "wrong bootstrap": ("wrong bootstrap", "wrong terminal bootstrap", "wrong_bootstrap"),
    "value loss dominates": ("value loss dominates", "c₁ = 5", "c1=5", "heavier value", "heavy value"),
    "no gradient clipping": ("no gradient clipping", "without the norm clip", "norm clip's absence",
                             "its absence", "max_norm=float(\"inf\")"),
}
HINTS = {
    # How the lab's item 7 gave the two gradient-scale rows away (issue 30): pointing at Adam's
    # normalisation, which keeps their steps, and their KL, as they were.
    "value loss dominates": ("adam", "separate networks", "near miss in part 5"),
    "no gradient clipping": ("adam", "separate networks", "near miss in part 5"),
}

NUMBER_WORDS = ("zero one two three four five six seven eight nine ten eleven twelve").split()


def outcomes(assignment: str) -> list[Outcome]:
    """Each graded prediction of the assignment, with the words that would give its answer away."""
    exact = load_solution(ROOT, assignment, "exact")
    if assignment == "ps1":
        release = COURSE.assignment("ps1").release_notebook.read_text()
        climb_cost = float(re.search(r"CLIMB_COST = ([0-9.]+)", release)[1])
        flip = exact.flip_horizon(climb_cost, 12)
        number = "never" if flip is None else str(flip)
        words = (number,) + ((NUMBER_WORDS[flip],) if flip is not None and flip < len(NUMBER_WORDS) else ())
        return [Outcome("PREDICTED_FLIP_HORIZON", "horizon_run", words,
                        about=("steps left", "turns right", "turn right", "right first", "flip"))]
    if assignment == "ps2":
        return [Outcome(f"KL_PREDICTION[{variant!r}]", "break_it_lab", BAND_WORDS[band] + HINTS.get(variant, ()),
                        about=VARIANT_NAMES[variant]) for variant, band in exact.BREAK_IT_KL.items()]
    if assignment == "ps3":
        answers = exact.EXPERIMENT_ANSWERS
        assert answers == {"LAMBDA_PREDICTION": "lambda = 0 lower", "SPARSE_PREDICTION": "does not learn"}, \
            "the words below state these answers: list the words of the new ones"
        return [Outcome("LAMBDA_PREDICTION", "given_lambda_sweep",
                        ("lower", "slowest", "slower", "below every", "ends below", "ended below", "learns less",
                         "worse"), about=("λ = 0", "λ=0", "lam=0")),
                Outcome("SPARSE_PREDICTION", "given_sparse",
                        ("does not learn", "doesn't learn", "never learns", "not learn at all", "no signal",
                         "gradient is exactly zero", "never moves", "not one episode", "never reaches the limit",
                         "changes nothing"),
                        about=("sparse", "without any reward", "no reward", "unrewarded", "rewarded episodes"))]
    return []


def normalised(text: str) -> str:
    """Lower case, LaTeX and spelling of lambda folded to `λ`, `$` and `*` removed, spaces collapsed."""
    text = text.lower().replace("\\lambda", "λ").replace("lambda", "λ").replace("$", "").replace("*", "")
    return " ".join(text.split())


def passages(cell) -> list[str]:
    """A markdown cell's paragraphs and list items, or a code cell's lines, normalised."""
    if cell.cell_type == "code":
        return [normalised(line) for line in cell.source.splitlines() if line.strip()]
    parts = re.split(r"\n\s*\n|\n(?=\s*(?:[*-]|\d+\.)\s)", cell.source)
    return [normalised(part) for part in parts if part.strip()]


def quoted_options(text: str, options) -> str:
    """The text with each of the prediction's options written in quotes taken out."""
    for option in options:
        text = re.sub(r"[\"'“”`]" + re.escape(normalised(option)) + r"[\"'“”`]", " ", text)
    return text


def says(passage: str, phrase: str) -> bool:
    """The phrase as words of the passage (a number not as part of another number)."""
    return re.search(r"(?<![\w.])" + re.escape(phrase) + r"(?![\w]|\.\d)", passage) is not None


def stated_outcomes(notebook, outcome: Outcome, options=()) -> list[str]:
    """The passages, outside the run cell, that state the outcome (with their cell's index)."""
    found = []
    for index, cell in enumerate(notebook.cells):
        if grade_id_of(cell) == outcome.run_cell:
            continue
        for passage in passages(cell):
            passage = quoted_options(passage, options)
            if outcome.about and not any(says(passage, name) for name in outcome.about):
                continue
            if any(says(passage, phrase) for phrase in outcome.words):
                found.append(f"cell {index}: {passage}")
    return found


def options_of(assignment: str) -> tuple[str, ...]:
    exact = load_solution(ROOT, assignment, "exact")
    return {"ps2": tuple(getattr(exact, "KL_BANDS", ())),
            "ps3": sum(getattr(exact, "EXPERIMENT_OPTIONS", {}).values(), ())}.get(assignment, ())


CASES = [(name, outcome) for name in COURSE.assignment_names() for outcome in outcomes(name)]


@pytest.mark.parametrize("name, outcome", CASES, ids=[f"{name}-{o.prediction}" for name, o in CASES])
def test_no_cell_states_a_predictions_outcome(name, outcome):
    notebook = nbformat.read(COURSE.assignment(name).release_notebook, as_version=4)
    assert outcome.run_cell in [grade_id_of(cell) for cell in notebook.cells], outcome.run_cell
    assert stated_outcomes(notebook, outcome, options_of(name)) == []


def test_every_graded_prediction_is_read_for():
    """ps1's, ps2's and ps3's graded predictions all have their words (a course's new assignment
    may have none)."""
    assert {name for name, _ in CASES} >= {"ps1", "ps2", "ps3"}
    assert len([case for case in CASES if case[0] == "ps2"]) == 8


ISSUE_30 = {
    # The sentences issue 30 quotes (ps2's cells after the break-it lab in their old wording, the
    # lab's item 7) and how ps3's old prose stated its outcomes: each must be caught.
    "ps2": ["* **value loss dominates**: the norm clip already shortens ... The KL column hardly notices "
            "because of Adam (Part 5).",
            "* **no gradient clipping**: for the same reason its absence barely shows here: Adam's steps stay "
            "near the learning rate with or without the clip.",
            "Second, the wrong bootstrap is a real bug, yet its KL and clip fraction look like the standard run's.",
            "First, why does the clip without the min land between the standard run and no clip at all in the "
            "KL column?",
            "7. **Value loss dominates** (c₁ = 5 instead of 0.5): ... (The actor and the critic are separate "
            "networks here, stepped by one Adam optimiser; see the near miss in Part 5.)"],
    "ps3": ["One effect is large enough to see: $\\lambda = 0$ learns the slowest (on seeds 0–9, every "
            "$\\lambda = 0$ run ended below every $\\lambda = 1$ run).",
            "Unless some episode happens to reach the limit, the policy never moves, which is what the printed "
            "count of rewarded episodes shows: on each of seeds 0–9 not one episode reached the limit."],
    "ps1": ["**Predict before you run.** With this climb cost the first move from cell 0 turns right at 7 "
            "steps left."],
}


@pytest.mark.parametrize("name", sorted(ISSUE_30))
def test_the_words_catch_what_gave_answers_away(name):
    """Does the check find each sentence that gave an answer away, put in a cell of its own?"""
    notebook = nbformat.read(COURSE.assignment(name).release_notebook, as_version=4)
    for sentence in ISSUE_30[name]:
        planted = nbformat.v4.new_notebook(cells=[*notebook.cells, nbformat.v4.new_markdown_cell(sentence)])
        index = len(planted.cells) - 1
        caught = [found for outcome in outcomes(name)
                  for found in stated_outcomes(planted, outcome, options_of(name)) if found.startswith(f"cell {index}:")]
        assert caught, sentence
