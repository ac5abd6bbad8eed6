"""Figures for ps1's feedback pages: what the student's code does, next to what it should do.

`collect(student, params)` runs in the grader process while the student's worker is alive and
returns plain JSON data (lists of floats), which the report keeps as `artifacts`;
`figures(artifacts)` draws them later, in any process, without the student's code. Each part of
`collect` is on its own: a part whose student call fails is left out and the others are still
collected.

Only the student's own outputs and textbook curves are stored: the inputs are one-step episodes
at ratios on a plain grid, which give no hidden item's answers away. The training figure is drawn
for the student's own rewards (`params`): the reference's curves trained with them
(reference_curves.json holds every allowed pair) and the uniform and best returns the oracle
gives for them.
"""
from __future__ import annotations

import json
import math
from functools import partial
from pathlib import Path

import numpy as np

from rlcourse.grading.figures import (
    clipped_objective_figure, collect_each, draw_present, new_figure, sign_key, stored_series)

CLIP = 0.2
"""The clip drawn when the student's own (PARAMS['clip']) is not known: the default. The figure
is drawn at the student's own eps, the one exercise 4 asks them to reason with, so its band
reads "1 ± 0.1" for a student whose eps is 0.1 (it used to be the 0.25 of
test_ppo_clip_both_signs for everyone, issue 30)."""
# 29 ratios from 0.31 to 1.69: none falls on a band edge of any allowed clip (1 ± 0.1 to 1 ±
# 0.3; the nearest is 0.0014 away), where the clipped objective has a kink and float32 rounding
# decides which branch the min takes.
RATIOS = np.linspace(0.31, 1.69, 29)
ADVANTAGES = (1.0, -1.0)
THETA = np.array([0.0, 0.4, 0.0], dtype=np.float32)
MAX_HISTORY = 10_000
REFERENCE_CURVES = Path(__file__).with_name("reference_curves.json")
REWARDS = ("step_cost", "goal_reward")
"""The parameters that set the training figure's scale (graders/ps1/assignment.toml)."""


# --- collect (grader process, student worker alive) --------------------------------------------
def collect(student, params: dict | None = None) -> dict:
    """The figures' data; `params` are the graded student's own values (the defaults if None)."""
    clip = float((params or {}).get("clip", CLIP))
    return collect_each(student, (("clip_objective", partial(_clip_objective, clip=clip)),
                                  ("training", partial(_training_curves, params=params or {}))))


def _one_step_records(advantage: float, ratio: float, logp: float) -> dict:
    """One one-step episode with the chosen ratio, built as test_ppo_clip_both_signs builds them
    (float32, int32 and bool, as the notebook's rollout produces)."""
    return {"observation": np.array([[1]], dtype=np.int32),
            "action": np.array([[1]], dtype=np.int32),
            "reward": np.array([[advantage]], dtype=np.float32),
            "active": np.array([[True]]),
            "terminated": np.array([[True]]),
            "truncated": np.array([[False]]),
            "old_logp": np.array([[logp - math.log(ratio)]], dtype=np.float32)}


def _clip_objective(student, clip: float = CLIP) -> dict:
    """The student's per-sample objective (minus the loss) at each ratio, for A = +1 and -1,
    with the student's own clip.
    A sign whose first call fails is dropped at once, so a missing or hanging policy_loss costs
    one call per sign, not one per ratio."""
    logp = -float(np.logaddexp(0.0, -float(THETA[1])))  # log pi(right | cell 1)
    curves = {}
    loss = _loss_of(student, clip)
    for advantage in ADVANTAGES:
        values = []
        for ratio in RATIOS:
            records = _one_step_records(advantage, float(ratio), logp)
            value = _finite_float(loss(records))
            values.append(None if value is None else -value)
        if any(value is not None for value in values):
            curves[sign_key(advantage)] = values
    if not curves:
        return {}
    return {"clip": clip, "ratios": [float(r) for r in RATIOS], "student": curves}


def _loss_of(student, clip: float):
    """policy_loss(THETA, records) through the program its gradient items compiled (value and
    gradient, the same signature); its value alone from the first time the gradient cannot be
    taken. A hang or a crash is raised, not asked again."""
    from rlcourse.worker.errors import WorkerError

    settings = dict(method="ppo", clip=clip, compiled=True)
    value_only = []

    def loss(records):
        if not value_only:
            try:
                return student.value_and_grad("policy_loss", THETA, records, wrt="theta",
                                              **settings)[0]
            except WorkerError as error:
                if error.kind in ("timeout", "worker_crashed"):
                    raise
                value_only.append(True)
        return student.call("policy_loss", THETA, records, **settings)

    return loss


def _training_curves(student, params: dict) -> dict:
    values = student.get("history_pg", "history_ppo")
    curves = {}
    for key, name in (("reinforce", "history_pg"), ("ppo", "history_ppo")):
        try:
            history = np.asarray(values[name], dtype=np.float64).reshape(-1)
        except (TypeError, ValueError):
            continue
        if 0 < history.size <= MAX_HISTORY:
            curves[key] = [float(v) if math.isfinite(v) else None for v in history]
    if curves:
        curves["rewards"] = {name: float(params[name]) for name in REWARDS if name in params}
    return curves


def _finite_float(value) -> float | None:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    if array.size != 1 or not np.isfinite(array).all():
        return None
    return float(array.reshape(()))


# --- figures (any process, from stored artifacts) -----------------------------------------------
def figures(artifacts: dict) -> list:
    """[(title, matplotlib Figure)] for the parts present and well-formed in `artifacts`."""
    return draw_present(artifacts, (("clip_objective", _draw_clip_objective), ("training", _draw_training)))


def _draw_clip_objective(data: dict):
    clip = float(data["clip"])
    figure = clipped_objective_figure(
        data, eps=clip, show_right=True, band_label=f"band 1 ± {clip:g} (your eps)",
        student_label="your policy_loss (minus)", missing="your policy_loss gave no value here",
        ylabel="per-sample objective (minus the loss)")
    return "Your clipped objective against the correct one", figure


def reference_curves(step_cost: float, goal_reward: float) -> dict | None:
    """The reference's training curves (seed 0) with these rewards, or None if not stored."""
    for entry in json.loads(REFERENCE_CURVES.read_text())["curves"]:
        if math.isclose(entry["step_cost"], step_cost) and math.isclose(entry["goal_reward"], goal_reward):
            return entry
    return None


def _oracle():
    from rlcourse.course.solutions import load_solution

    return load_solution(Path(__file__).resolve().parents[2], "ps1", "exact")


def _draw_training(data: dict):
    exact = _oracle().for_parameters(data.get("rewards") or {})  # none stored: the defaults
    rewards = exact.corridor
    reference = reference_curves(rewards.step_cost, rewards.goal_reward) or {}
    figure = new_figure(10, 4.2)
    ax = figure.subplots()
    styles = {"reinforce": ("REINFORCE", "#2b6cb0"), "ppo": ("clipped surrogate (PPO)", "#dd6b20")}
    for key, (label, colour) in styles.items():
        if key in reference:
            ax.plot(np.arange(len(reference[key])), reference[key], color=colour, alpha=0.45,
                    linewidth=4, label=f"reference {label}")
        if data.get(key) is not None:
            values = stored_series(data[key])
            ax.plot(np.arange(values.size), values, color=colour, linewidth=1.6,
                    label=f"your {label}")
    best, uniform = exact.best_return(), exact.uniform_return()
    ax.axhline(best, color="#4a5568", linestyle="--", linewidth=1, label=f"always right ({best:.6g})")
    ax.axhline(uniform, color="#a0aec0", linestyle=":", linewidth=1.2,
               label=f"uniform policy ({uniform:.6g})")
    if rewards != exact.DEFAULT:
        ax.set_title(f"with your rewards: step cost {rewards.step_cost:g}, goal reward "
                     f"{rewards.goal_reward:g}", fontsize=10)
    ax.set_xlabel("update")
    ax.set_ylabel("exact expected return")
    ax.grid(alpha=0.3)
    # Outside the axes: a student's curve may go anywhere inside them.
    figure.legend(*ax.get_legend_handles_labels(), loc="outside right center", fontsize=8,
                  frameon=False)
    return "Exact return of your trained policy (seed 0) against the reference", figure
