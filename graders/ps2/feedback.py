"""Figures for ps2's feedback pages: GAE along a rollout buffer, and the clipped surrogate.

`collect(student, params)` runs in the grader process while the student's worker is alive and
returns plain JSON data, which the report keeps as `artifacts`; `figures(artifacts, sealed=...)`
draws them later, in any process, without the student's code. Each part of `collect` stands on
its own: a part whose student call fails is left out and the other is still collected.

What is stored is the figure's own inputs (a buffer built here, ratios on a plain grid) and the
student's outputs on them; the right curves are drawn from those inputs with the course's oracle
(solutions/ps2/exact.py) when the page is drawn. Why that gives nothing away before the due date:

* GAE. The buffer is none of the graders' buffers (its own seed, its own layout) and not the
  episode of the concept checks CONCEPT_GAE_TRUNCATED and CONCEPT_GAE_TERMINATED (whose
  numbers, gamma 0.9 and lambda 0.5, it does not use). compute_gae's items are code items, shown
  before the due date with the values they should be, and the notebook's visible check already
  works the same rule through (a terminated step loses its bootstrap, both ends cut the trace):
  the exact advantages on one more buffer tell nothing an item's message or the docstring does not.
* The clipped surrogate. The right curve min(rA, clip(r)A) for A = +1 and -1 at eps 0.2 answers
  three concept checks by reading it off (CONCEPT_CLIPPED_VALUE at r = 1.4, A = -2; the slopes
  at r = 1.3 and 0.7), which are sealed until the due date. So the page draws it only when none
  of those items is sealed (`sealed`, the item ids student_view holds back); before that the
  figure shows the student's own curve and the band, which are theirs to see: their own function
  on inputs they could pass it themselves.
"""
from __future__ import annotations

from functools import partial
from pathlib import Path

import numpy as np

from rlcourse.grading.figures import (
    clipped_objective_figure, collect_each, draw_present, finite_array, new_figure, plain, sign_key,
    stored_series, unless_the_worker_is_lost)

DEFAULT_EPS = 0.2
"""PPOConfig's eps, the clip every student trains with unless the assignment gives them their own
(`params["eps"]` or `params["clip"]`, should ps2 ever have variants)."""
DEFAULT_GAMMA, DEFAULT_LAM = 0.99, 0.95
"""PPOConfig's gamma and lambda: the GAE figure is drawn at the values the student's runs use."""
# 29 ratios from 0.31 to 1.69: none falls exactly on a band edge for eps in 0.05 steps, where the
# objective has a kink and rounding decides which branch the min takes.
RATIOS = np.linspace(0.31, 1.69, 29)
ADVANTAGES = (1.0, -1.0)
STEPS = 20
ENDS = ({5: "terminated", 12: "truncated"}, {3: "truncated", 10: "terminated", 16: "terminated"})
"""Where each of the buffer's two environments ends an episode: both kinds in each column, and the
last row still running (it bootstraps from next_values, as every buffer's last row does)."""
BUFFER_SEED = 2030
SURROGATE_ANSWERS = frozenset({"concepts.clipped_value", "concepts.slope_favoured",
                               "concepts.slope_wrong_way"})
"""The items whose answers can be read off the right clipped-surrogate curve."""


# --- collect (grader process, student worker alive) --------------------------------------------
def collect(student, params: dict | None = None) -> dict:
    """The figures' data; `params` are the graded student's own values (none: the defaults)."""
    params = params or {}
    return collect_each(student, (("gae", partial(_gae, params=params)),
                                  ("surrogate", partial(_surrogate, params=params))))


def figure_buffer(gamma: float = DEFAULT_GAMMA, lam: float = DEFAULT_LAM) -> dict:
    """The GAE figure's rollout buffer [STEPS, 2], as a rollout makes one (graders/ps2/test_gae.py,
    rollout_violations): float64 rewards and values, bool flags never both set on one step, and
    next_values[t] = values[t + 1] wherever step t's episode went on; after an end (and on the
    last row) the final observation's own value, non-zero after a termination too, so a bootstrap
    through a termination shows."""
    rng = np.random.default_rng(BUFFER_SEED)
    shape = (STEPS, len(ENDS))
    rewards = rng.normal(0.0, 1.0, shape)
    values = rng.normal(1.0, 1.0, shape)
    next_values = np.vstack([values[1:], rng.normal(1.0, 1.0, (1, shape[1]))])
    terminated, truncated = np.zeros(shape, bool), np.zeros(shape, bool)
    for column, ends in enumerate(ENDS):
        for step, kind in ends.items():
            (terminated if kind == "terminated" else truncated)[step, column] = True
            next_values[step, column] = rng.normal(2.0, 1.0)
    return {"rewards": rewards, "values": values, "next_values": next_values,
            "terminated": terminated, "truncated": truncated, "gamma": gamma, "lam": lam}


def _gae(student, params: dict) -> dict:
    buffer = figure_buffer(float(params.get("gamma", DEFAULT_GAMMA)), float(params.get("lam", DEFAULT_LAM)))
    arrays = [buffer[key] for key in ("rewards", "values", "next_values", "terminated", "truncated")]
    actual = finite_array(student.call("compute_gae", *arrays, gamma=buffer["gamma"], lam=buffer["lam"]))
    if actual is None or actual.shape != buffer["rewards"].shape:
        return {}
    return {key: plain(value) for key, value in buffer.items()} | {"student": plain(actual)}


def _surrogate(student, params: dict) -> dict:
    """The student's clipped_surrogate at each ratio, for A = +1 and -1, at the student's eps: one
    call per sign (the function is elementwise)."""
    eps = float(params.get("eps", params.get("clip", DEFAULT_EPS)))
    curves = {}
    for advantage in ADVANTAGES:
        try:
            values = finite_array(student.call("clipped_surrogate", RATIOS.copy(),
                                               np.full(RATIOS.shape, advantage), eps=eps))
        except Exception as error:  # noqa: BLE001 - one sign may fail alone
            unless_the_worker_is_lost(error)
            continue
        if values is not None and values.shape == RATIOS.shape:
            curves[sign_key(advantage)] = plain(values)
    return {"eps": eps, "ratios": plain(RATIOS), "student": curves} if curves else {}


# --- figures (any process, from stored artifacts) -----------------------------------------------
def figures(artifacts: dict, *, sealed=frozenset()) -> list:
    """[(title, matplotlib Figure)] for the parts present and well-formed in `artifacts`; `sealed`
    is the ids of the items whose outcome the page holds back (rlcourse.grading.grade.student_view)."""
    return draw_present(artifacts, (("gae", _draw_gae), ("surrogate", _draw_surrogate)), sealed=frozenset(sealed))


def _oracle():
    from rlcourse.course.solutions import load_solution

    return load_solution(Path(__file__).resolve().parents[2], "ps2", "exact")


def _draw_gae(data: dict, *, sealed=frozenset()):
    from matplotlib.ticker import MaxNLocator

    rewards, values, next_values = (stored_series(data[key]) for key in ("rewards", "values", "next_values"))
    terminated, truncated = (np.array(data[key], dtype=bool) for key in ("terminated", "truncated"))
    student = stored_series(data["student"])
    gamma, lam = float(data["gamma"]), float(data["lam"])
    if not (rewards.shape == values.shape == next_values.shape == terminated.shape
            == truncated.shape == student.shape) or rewards.ndim != 2:
        raise ValueError("the buffer's arrays differ in shape")
    exact = _oracle().gae_by_definition(rewards, values, next_values, terminated, truncated,
                                        gamma=gamma, lam=lam)
    steps, envs = rewards.shape
    figure = new_figure(10, 2.6 * envs + 0.8)
    axes = np.atleast_1d(figure.subplots(envs, 1, sharex=True, squeeze=False)[:, 0])
    time = np.arange(steps)
    for column, ax in enumerate(axes):
        ended = terminated[:, column] | truncated[:, column]
        start = 0
        for stop in [*np.flatnonzero(ended) + 1, steps]:  # one line per episode: no trace across an end
            if stop > start:
                ax.plot(time[start:stop], exact[start:stop, column], color="#2b6cb0", linewidth=3,
                        alpha=0.6, label="exact GAE" if start == 0 else None)
            start = stop
        ax.plot(time, student[:, column], "o--", color="#dd6b20", markersize=4, linewidth=1.1,
                label="your compute_gae")
        for step in np.flatnonzero(terminated[:, column]):
            ax.axvline(step + 0.5, color="#9b2c2c", linewidth=1.6, label="terminated after this step")
        for step in np.flatnonzero(truncated[:, column]):
            ax.axvline(step + 0.5, color="#6b46c1", linewidth=1.6, linestyle="--",
                       label="truncated after this step")
        ax.set_ylabel(f"environment {column}\nadvantage")
        ax.grid(alpha=0.3)
    axes[-1].set_xlabel(f"step t of the buffer (gamma {gamma:g}, lambda {lam:g})")
    axes[-1].xaxis.set_major_locator(MaxNLocator(integer=True))
    handles = {}
    for ax in axes:  # each label once, in the order first drawn
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    figure.legend(list(handles.values()), list(handles), loc="outside lower center",
                  ncols=len(handles), fontsize=9, frameon=False)
    return "Your GAE along a rollout buffer against the exact advantages", figure


def _draw_surrogate(data: dict, *, sealed=frozenset()):
    eps = float(data["eps"])
    if not 0.0 < eps < 1.0:
        raise ValueError("eps out of range")
    show_right = not (sealed & SURROGATE_ANSWERS)
    figure = clipped_objective_figure(
        data, eps=eps, show_right=show_right, band_label=f"clipping band 1 ± {eps:g}",
        student_label="your clipped_surrogate", missing="your clipped_surrogate gave no value here",
        ylabel="per-sample objective")
    title = "Your clipped surrogate" + (" against the correct one" if show_right else
                                        " (the correct curve is shown after the due date)")
    return title, figure
