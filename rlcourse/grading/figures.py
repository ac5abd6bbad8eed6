"""What an assignment's feedback module (`graders/<assignment>/feedback.py`) collects and draws with.

A feedback module has two halves that run in different processes: `collect(student, params)`
runs in the grader while the student's worker is alive and returns plain JSON (the report keeps it
as `artifacts`, so it goes through the ledger), and `figures(artifacts)` draws it later, anywhere,
without the student's code. The helpers here are the parts every module needs on either side of
that line: turning a student's output into JSON that survives NaN, reading it back, deciding
which failures leave a panel out and which stop asking the worker, and a figure that needs no
display. They live in the grading API because graders import nothing of the pages' stages.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Iterable

import numpy as np

from rlcourse.worker.errors import WorkerError

DAMAGED_ARTIFACTS = (TypeError, ValueError, KeyError, AttributeError, IndexError)
"""What drawing raises on artifacts from an older or damaged ledger: that figure is left out."""


# --- collect (grader process, student worker alive) --------------------------------------------
def collect_each(student, parts: Iterable[tuple[str, Callable]]) -> dict:
    """{name: data} for each `(name, part)` whose `part(student)` gives data: a part the
    student's code makes fail (or that finds nothing to draw) only leaves its figure out."""
    artifacts = {}
    for name, part in parts:
        try:
            data = part(student)
        except Exception:  # noqa: BLE001 - the student's failure only leaves this figure out
            continue
        if data:
            artifacts[name] = data
    return artifacts


def unless_the_worker_is_lost(error: Exception) -> None:
    """Re-raise a hang or a crash: asking the next call would wait out another limit or start a
    fresh worker (the cells again) for a figure; any other failure leaves only this panel out."""
    if isinstance(error, WorkerError) and error.kind in ("timeout", "worker_crashed"):
        raise error


def finite_array(value) -> np.ndarray | None:
    """The student's output as float64, NaN where it is not finite; None if it is not numbers."""
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        return None
    return np.where(np.isfinite(array), array, np.nan)


def plain(value):
    """JSON data: a float, or nested lists of floats or bools, None for NaN (the ledger is JSON)."""
    array = np.asarray(value)
    if array.dtype == bool:
        return array.tolist()
    if array.ndim == 0:
        number = float(array)
        return number if math.isfinite(number) else None
    if array.ndim > 1:
        return [plain(row) for row in array]
    return [float(v) if math.isfinite(v) else None for v in array.astype(np.float64)]


def sign_key(advantage: float) -> str:
    """The artifacts' key for one advantage sign (JSON keys are strings)."""
    return "positive" if advantage > 0 else "negative"


# --- figures (any process, from stored artifacts) -----------------------------------------------
def draw_present(artifacts, drawers: Iterable[tuple[str, Callable]], **options) -> list:
    """[(title, Figure)] from each `(key, draw)` whose data is present and well formed in
    `artifacts`; `options` are passed to every `draw` (e.g. `sealed`)."""
    out = []
    for key, draw in drawers:
        data = artifacts.get(key) if isinstance(artifacts, dict) else None
        if not data or not isinstance(data, dict):
            continue
        try:
            out.append(draw(data, **options))
        except DAMAGED_ARTIFACTS:
            continue
    return out


def new_figure(width: float, height: float):
    """A matplotlib Figure on the Agg canvas: no display, no pyplot state shared between pages."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def stored_series(values) -> np.ndarray:
    """Stored numbers back as float64 (None is NaN); a list of lists as a 2-D array."""
    if values and isinstance(values[0], list):
        return np.array([stored_series(row) for row in values], dtype=np.float64)
    return np.array([np.nan if v is None else float(v) for v in values], dtype=np.float64)


def clipped_objective_figure(data: dict, *, eps: float, show_right: bool, band_label: str,
                             student_label: str, missing: str, ylabel: str):
    """PPO's clipped objective for A = +1 and A = -1 side by side: the band at `eps`, the right
    curve min(rA, clip(r)A) when `show_right`, and the student's values stored in `data`
    (`ratios`, and `student` keyed by `sign_key`; `missing` is said where a sign has none). ps1 draws its policy_loss this way, ps2 its
    clipped_surrogate: one figure, so that the two assignments show the same picture."""
    ratios = np.asarray(data["ratios"], dtype=np.float64)
    fine = np.linspace(ratios.min(), ratios.max(), 400)
    figure = new_figure(10, 4.4)
    axes = figure.subplots(1, 2, sharey=True)
    for ax, advantage in zip(axes, (1.0, -1.0)):
        ax.axvspan(1 - eps, 1 + eps, color="#dbe9f6", label=band_label)
        if show_right:
            ax.plot(fine, np.minimum(fine * advantage, np.clip(fine, 1 - eps, 1 + eps) * advantage),
                    color="#2b6cb0", linewidth=2.5, label="correct: min(rA, clip(r)A)")
        student = data["student"].get(sign_key(advantage))
        if student is not None:
            values = stored_series(student)
            if values.shape != ratios.shape:
                raise ValueError("ratios and values differ in length")
            ax.plot(ratios, values, "o--", color="#dd6b20", markersize=4, linewidth=1.2, label=student_label)
        else:
            ax.text(0.5, 0.5, missing, transform=ax.transAxes,
                    ha="center", color="#9b2c2c")
        ax.set_title(f"advantage A = {advantage:+g}")
        ax.set_xlabel("probability ratio r = π(a|s) / π_old(a|s)")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel(ylabel)
    # One legend below both panels: inside, it would hide the curves it explains.
    handles, labels = axes[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="outside lower center", ncols=len(handles), fontsize=9,
                  frameon=False)
    return figure
