"""Figures for ps3's feedback pages: returns and GAE along an episode, and the gradient check.

`collect(student, params)` runs in the grader process while the student's worker is alive and
returns plain JSON data, which the report keeps as `artifacts`; `figures(artifacts)` draws them
later, in any process, without the student's code. Each part of `collect` stands on its own: a
student call that fails leaves its panel out and the others are still collected.

What is stored is the figures' own inputs (an episode, a buffer and two batches built here from a
seed of their own, none of them a grader's or the notebook's) and the student's outputs on them;
the right values are drawn from those inputs with the course's oracle (solutions/ps3/exact.py)
when the page is drawn. None of that answers anything sealed before the due date: the functions
drawn are code items, whose messages show the values they should be before the due date anyway;
the rules the exact curves follow (reward-to-go discounted from each step, a truncated step
keeping its bootstrap, both ends cutting the trace) are stated in the notebook's own text; the
finite differences are of the loss the docstrings write out, which the notebook asks students to
difference themselves; and no concept check asks for a return, an advantage or a gradient of
these inputs (CONCEPT_TIME_LIMIT_TARGET's one-step target uses numbers none of them has).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from rlcourse.grading.figures import (
    collect_each, draw_present, finite_array, new_figure, plain, stored_series, unless_the_worker_is_lost)

SEED = 3030
GAMMA, LAM = 0.99, 0.95
"""`train`'s defaults: the figures are drawn at the discount and lambda the student's runs use."""
RETURNS_GAMMA = 0.9
"""The episode's discount: lower than GAMMA, so that where a return is discounted from shows."""
EPISODE_STEPS = 16
BUFFER_STEPS = 24
BUFFER_ENDS = {6: "terminated", 13: "truncated", 19: "terminated"}
"""Where the GAE buffer's episodes end: both kinds, and the last step still running."""
BUFFER_KEYS = ("rewards", "values", "next_values", "terminated", "truncated")
"""gae's positional arguments, in order."""
BATCH_ROWS, ACTIONS = 6, 3
EPS = 0.2
"""ppo_logit_grad's default clip, the one `train` uses."""
PPO_RATIOS = (0.6, 0.9, 1.1, 1.5, 0.6, 1.5)
PPO_SIGNS = (1.0, 1.0, 1.0, 1.0, -1.0, -1.0)
"""Ratios of the taken actions, on both sides of the band for both advantage signs: two rows
where the clip makes the loss flat (A > 0 above it, A < 0 below it) and four where it does not."""


# --- collect (grader process, student worker alive) --------------------------------------------
def collect(student, params: dict | None = None) -> dict:
    """The figures' data (ps3 has no per-student parameters: `params` is unused)."""
    return collect_each(student, (("returns", _returns), ("gradients", _gradients)))


def figure_inputs() -> dict:
    """Every input the figures feed the student's functions, from one seed of their own:

    * an episode's rewards [EPISODE_STEPS];
    * a buffer of one environment [BUFFER_STEPS] as a rollout makes it (graders/ps3/test_gae.py,
      rollout_violations): next_values[t] = values[t + 1] where the episode went on, the final
      observation's own value after an end (non-zero after a termination too, so a bootstrap
      through it shows) and on the last step;
    * a batch of logits [BATCH_ROWS, ACTIONS] with actions and weights for reinforce_logit_grad;
    * the same logits with the old probabilities that give PPO_RATIOS for ppo_logit_grad."""
    rng = np.random.default_rng(SEED)
    episode = rng.normal(1.0, 1.0, EPISODE_STEPS)
    values = rng.normal(4.0, 2.0, BUFFER_STEPS)
    next_values = np.append(values[1:], rng.normal(4.0, 2.0))
    terminated, truncated = np.zeros(BUFFER_STEPS, bool), np.zeros(BUFFER_STEPS, bool)
    for step, kind in BUFFER_ENDS.items():
        (terminated if kind == "terminated" else truncated)[step] = True
        next_values[step] = rng.normal(4.0, 2.0)
    buffer = {"rewards": rng.normal(1.0, 1.0, BUFFER_STEPS), "values": values,
              "next_values": next_values, "terminated": terminated, "truncated": truncated}
    logits = rng.normal(0.0, 0.5, (BATCH_ROWS, ACTIONS))
    actions = rng.integers(0, ACTIONS, BATCH_ROWS)
    weights = rng.normal(0.0, 2.0, BATCH_ROWS)
    return {"episode": episode, "buffer": buffer, "logits": logits, "actions": actions,
            "weights": weights, "old_probs": _old_probs(_softmax(logits), actions),
            "advantages": np.array(PPO_SIGNS) * np.abs(weights)}


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return shifted / shifted.sum(axis=-1, keepdims=True)


def _old_probs(probs: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """Distributions under which each taken action had probability probs / ratio (PPO_RATIOS),
    the other actions keeping their proportions."""
    rows = np.arange(len(actions))
    taken = probs[rows, actions]
    old_taken = taken / np.array(PPO_RATIOS)
    old = probs * ((1.0 - old_taken) / (1.0 - taken))[:, None]
    old[rows, actions] = old_taken
    return old


def _returns(student) -> dict:
    inputs = figure_inputs()
    data = {"episode": plain(inputs["episode"]), "gamma": RETURNS_GAMMA}
    returns = finite_array(student.call("discounted_returns", inputs["episode"], RETURNS_GAMMA))
    if returns is not None and returns.shape == inputs["episode"].shape:
        data["student_returns"] = plain(returns)
    buffer = inputs["buffer"]
    try:
        advantages = finite_array(student.call("gae", *(buffer[key] for key in BUFFER_KEYS), GAMMA, LAM))
    except Exception as error:  # noqa: BLE001 - the returns' panel is kept without it
        unless_the_worker_is_lost(error)
        advantages = None
    if advantages is not None and advantages.shape == buffer["rewards"].shape:
        data |= {"buffer": {key: plain(value) for key, value in buffer.items()},
                 "lam": LAM, "buffer_gamma": GAMMA, "student_gae": plain(advantages)}
    return data if {"student_returns", "student_gae"} & set(data) else {}


def _gradients(student) -> dict:
    inputs = figure_inputs()
    probs = _softmax(inputs["logits"])
    data = {key: plain(inputs[key]) for key in ("logits", "weights", "old_probs", "advantages")}
    data |= {"actions": [int(a) for a in inputs["actions"]], "eps": EPS}
    for key, call in (("reinforce", lambda: student.call("reinforce_logit_grad", probs, inputs["actions"],
                                                         inputs["weights"])),
                      ("ppo", lambda: student.call("ppo_logit_grad", probs, inputs["old_probs"],
                                                   inputs["actions"], inputs["advantages"], eps=EPS))):
        try:
            gradient = finite_array(call())
        except Exception as error:  # noqa: BLE001 - one function failing leaves the other's panel
            unless_the_worker_is_lost(error)
            continue
        if gradient is not None and gradient.shape == probs.shape:
            data[f"student_{key}"] = plain(gradient)
    return data if {"student_reinforce", "student_ppo"} & set(data) else {}


# --- figures (any process, from stored artifacts) -----------------------------------------------
def figures(artifacts: dict) -> list:
    """[(title, matplotlib Figure)] for the parts present and well-formed in `artifacts`."""
    return draw_present(artifacts, (("returns", _draw_returns), ("gradients", _draw_gradients)))


def _oracle():
    from rlcourse.course.solutions import load_solution

    return load_solution(Path(__file__).resolve().parents[2], "ps3", "exact")


def _legend_below(figure, axes) -> None:
    handles = {}
    for ax in axes:  # each label once, in the order first drawn
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    figure.legend(list(handles.values()), list(handles), loc="outside lower center",
                  ncols=min(len(handles), 5), fontsize=9, frameon=False)


def _draw_returns(data: dict):
    from matplotlib.ticker import MaxNLocator

    exact = _oracle()
    panels = [key for key in ("student_returns", "student_gae") if key in data]
    if not panels:
        raise ValueError("nothing to draw")
    figure = new_figure(10, 3.2 * len(panels) + 0.6)
    axes = np.atleast_1d(figure.subplots(len(panels), 1, squeeze=False)[:, 0])
    for ax, key in zip(axes, panels):
        if key == "student_returns":
            episode, gamma = stored_series(data["episode"]), float(data["gamma"])
            student = stored_series(data[key])
            if student.shape != episode.shape:
                raise ValueError("the episode and the returns differ in length")
            time = np.arange(episode.size)
            ax.bar(time, episode, color="#cbd5e0", width=0.6, label="reward r_t")
            ax.plot(time, exact.reward_to_go(episode, gamma), color="#2b6cb0", linewidth=3, alpha=0.6,
                    label="reward-to-go G_t")
            ax.plot(time, student, "o--", color="#dd6b20", markersize=4, linewidth=1.1,
                    label="yours")
            ax.set_title(f"discounted_returns on one episode (gamma {gamma:g})", fontsize=10)
            ax.set_xlabel("step t of the episode")
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        else:
            _gae_panel(ax, data, exact)
        ax.grid(alpha=0.3)
    _legend_below(figure, axes)
    return "Your returns and advantages against the right ones", figure


def _gae_panel(ax, data: dict, exact) -> None:
    from matplotlib.ticker import MaxNLocator

    buffer = data["buffer"]
    rewards, values, next_values = (stored_series(buffer[key]) for key in ("rewards", "values", "next_values"))
    terminated, truncated = (np.array(buffer[key], dtype=bool) for key in ("terminated", "truncated"))
    student = stored_series(data["student_gae"])
    gamma, lam = float(data["buffer_gamma"]), float(data["lam"])
    if not (rewards.shape == values.shape == next_values.shape == terminated.shape == truncated.shape
            == student.shape) or rewards.ndim != 1:
        raise ValueError("the buffer's arrays differ in shape")
    right = exact.gae_by_definition(rewards, values, next_values, terminated, truncated, gamma, lam)
    steps = rewards.size
    time = np.arange(steps)
    start = 0
    for stop in [*np.flatnonzero(terminated | truncated) + 1, steps]:  # one line per episode
        if stop > start:
            ax.plot(time[start:stop], right[start:stop], color="#2b6cb0", linewidth=3, alpha=0.6,
                    label="exact GAE" if start == 0 else None)
        start = stop
    ax.plot(time, student, "o--", color="#dd6b20", markersize=4, linewidth=1.1, label="yours")
    for step in np.flatnonzero(terminated):
        ax.axvline(step + 0.5, color="#9b2c2c", linewidth=1.6, label="terminated after this step")
    for step in np.flatnonzero(truncated):
        ax.axvline(step + 0.5, color="#6b46c1", linewidth=1.6, linestyle="--",
                   label="truncated after this step")
    ax.set_title(f"gae along a buffer of one environment (gamma {gamma:g}, lambda {lam:g})", fontsize=10)
    ax.set_xlabel("step t of the buffer")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))


def _draw_gradients(data: dict):
    exact = _oracle()
    logits = stored_series(data["logits"])
    actions = np.array(data["actions"], dtype=np.int64)
    weights, advantages = stored_series(data["weights"]), stored_series(data["advantages"])
    old_probs, eps = stored_series(data["old_probs"]), float(data["eps"])
    if logits.ndim != 2 or actions.shape != (logits.shape[0],) or weights.shape != actions.shape:
        raise ValueError("the batch's arrays do not fit together")
    losses = {"reinforce": ("reinforce_logit_grad", "-mean(w log π(a))",
                            lambda z: exact.reinforce_loss(z, actions, weights)),
              "ppo": ("ppo_logit_grad", f"the clipped loss (eps {eps:g})",
                      lambda z: exact.ppo_loss(z, old_probs, actions, advantages, eps))}
    panels = [key for key in losses if f"student_{key}" in data]
    if not panels:
        raise ValueError("nothing to draw")
    figure = new_figure(5 * len(panels), 4.6)
    axes = np.atleast_1d(figure.subplots(1, len(panels), squeeze=False)[0])
    for ax, key in zip(axes, panels):
        name, loss_text, loss = losses[key]
        numeric = exact.finite_difference(loss, logits).reshape(-1)
        student = stored_series(data[f"student_{key}"])
        if student.shape != logits.shape:
            raise ValueError("the gradient's shape is not the logits'")
        student = student.reshape(-1)
        shown = np.isfinite(student)
        reach = float(np.nanmax(np.abs(np.concatenate([numeric, student[shown]])))) * 1.15 or 1.0
        ax.plot([-reach, reach], [-reach, reach], color="#2b6cb0", linewidth=2, alpha=0.6,
                label="agrees with finite differences")
        ax.plot(numeric[shown], student[shown], "o", color="#dd6b20", markersize=6,
                label="one entry of your gradient")
        ax.set_xlim(-reach, reach)
        ax.set_ylim(-reach, reach)
        ax.set_aspect("equal")
        ax.set_title(f"{name}: d/d logits of {loss_text}", fontsize=9)
        ax.set_xlabel("central finite difference")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("your gradient")
    _legend_below(figure, axes)
    return "The gradient check: your logit gradients against finite differences", figure
