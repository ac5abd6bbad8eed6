"""`make claims`: reruns the experiments behind every figure a notebook's prose states, prints each
figure, and fails if a sentence no longer holds.

A notebook's text about its experiments ("on each of seeds 0-4 ...") is a claim about code that
changes (the reference solution, the given training loops, the libraries). Each claim below quotes
the sentence it backs, exactly as the source notebook states it, so that editing the sentence
without the check (or the check without the sentence) fails too. The runs are the notebook's own:
the source notebook's code cells (reference answers included) are executed here, not copied.

Usage: python claims/run.py [ps2] [ps3]      (all when none is named; minutes, serial)
"""
from __future__ import annotations

import ast
import contextlib
import sys
import time
from pathlib import Path

import matplotlib
import nbformat
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PS2_SEEDS = range(5)
PS3_SEEDS = range(10)


def notebook_namespace(assignment: str, last_cell: str) -> dict:
    """The globals of the source notebook run from the top down to `last_cell`, tests skipped."""
    matplotlib.use("Agg")
    namespace: dict = {}
    for cell in nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4).cells:
        nbgrader = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or nbgrader.get("grade"):
            continue
        exec(compile(cell.source, f"{assignment}:{nbgrader.get('grade_id')}", "exec"), namespace)
        if nbgrader.get("grade_id") == last_cell:
            return namespace
    raise LookupError(f"{assignment}: no code cell {last_cell!r}")


def run_cell(namespace: dict, assignment: str, grade_id: str) -> None:
    """Runs one more of the source notebook's cells in `namespace` (one skipped on the way there)."""
    for cell in nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4).cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            exec(compile(cell.source, f"{assignment}:{grade_id}", "exec"), namespace)
            return
    raise LookupError(f"{assignment}: no cell {grade_id!r}")


def assigned(namespace: dict, assignment: str, grade_id: str, name: str):
    """Runs only the top-level `name = ...` statements of one of the source notebook's cells in
    `namespace` and returns the value: a lab's table of variants, without the runs that follow it."""
    for cell in nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4).cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            body = [statement for statement in ast.parse(cell.source).body if isinstance(statement, ast.Assign)
                    and any(isinstance(target, ast.Name) and target.id == name for target in statement.targets)]
            exec(compile(ast.Module(body=body, type_ignores=[]), f"{assignment}:{grade_id}", "exec"), namespace)
            return namespace[name]
    raise LookupError(f"{assignment}: no cell {grade_id!r}")


@contextlib.contextmanager
def gradient_norms(torch):
    """Records the global gradient norm (before clipping) of every torch.nn.utils.clip_grad_norm_
    call made inside the block; the clip acts as before."""
    calls, clip = [], torch.nn.utils.clip_grad_norm_

    def recording(parameters, max_norm, *args, **kwargs):
        norm = clip(parameters, max_norm, *args, **kwargs)
        calls.append(float(norm))
        return norm

    torch.nn.utils.clip_grad_norm_ = recording
    try:
        yield calls
    finally:
        torch.nn.utils.clip_grad_norm_ = clip


def prose(assignment: str) -> str:
    """The source notebook's markdown, with line breaks folded, as a reader reads it."""
    notebook = nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4)
    return " ".join(" ".join(cell.source.split()) for cell in notebook.cells if cell.cell_type == "markdown")


class Claims:
    """Collects each quoted sentence, the figures measured for it, and whether it held."""

    def __init__(self, assignment: str):
        self.assignment, self.text, self.failed = assignment, prose(assignment), []

    def check(self, quote: str | None, holds: bool, figures: str, *, about: str = "") -> None:
        """`quote`: the notebook's sentence; None for a fact the graders rely on (`about` says which)
        that the notebook must not state, such as the answer to a prediction."""
        quoted = quote is None or " ".join(quote.split()) in self.text
        verdict = "holds" if holds and quoted else ("NOT QUOTED in the notebook" if not quoted else "FAILS")
        print(f"[{self.assignment}] {verdict}: {about or repr(quote)}\n      {figures}", flush=True)
        if verdict != "holds":
            self.failed.append(about or quote)


# The near miss of Part 5: the lab's run with only the learning rate changed, to this.
PS2_LARGE_LR = 3e-2


def ps2() -> list[str]:
    ns = notebook_namespace("ps2", "ppo_update")
    torch, lab = ns["torch"], ns["LAB"]
    exact = load_exact("ps2")
    variants = {"standard": lab, **assigned(ns, "ps2", "break_it_lab", "VARIANTS")}
    runs = {**variants, "large learning rate": ns["dataclasses"].replace(lab, lr=PS2_LARGE_LR)}
    kl, clip, ret, first, entropy, shortened, shrink = ({name: [] for name in runs} for _ in range(7))
    for seed in PS2_SEEDS:
        for name, config in runs.items():
            with gradient_norms(torch) as calls:
                history = ns["train"](config, seed=seed)[0]
            norms = np.array(calls)
            kl[name].append(float(history["approx_kl"].mean()))
            clip[name].append(float(history["clip_fraction"].mean()))
            ret[name].append(float(history["return"][-1]))
            first[name].append(float(history["return"][0]))
            entropy[name].append(float(history["entropy"][-1]))
            # The share of gradient steps the lab's norm clip shortened (in the row without it: would
            # have shortened), and the median factor it shortened them by.
            over = norms > lab.max_norm
            shortened[name].append(float(over.mean()))
            shrink[name].append(float(np.median(lab.max_norm / norms[over])) if over.any() else 1.0)
    ratio = {name: np.array(kl[name]) / np.array(kl["standard"]) for name in runs}
    show = lambda name: (f"{name}: KL / standard per seed {np.round(ratio[name], 2).tolist()}, "
                         f"clip fraction {np.round(clip[name], 3).tolist()}")
    for name in runs:
        print(f"      [{name}] final return per seed {np.round(ret[name], 3).tolist()}; {show(name)}; "
              f"final entropy {np.round(entropy[name], 3).tolist()}; steps the norm clip shortened "
              f"{np.round(shortened[name], 3).tolist()}, by a median factor {np.round(shrink[name], 3).tolist()}")
    claims = Claims("ps2")
    above = lambda name: np.array(ret[name]) > np.array(ret["standard"])
    claims.check("the no-entropy row ended above the standard one on some seeds and below it on others",
                 0 < above("no entropy").sum() < len(PS2_SEEDS), f"above on {above('no entropy').tolist()}")
    claims.check("the clip-without-min row, a broken variant, ended above the standard run on every one of them",
                 all(above("clip without min")), f"above on {above('clip without min').tolist()}")
    # Part 5's near miss: the learning rate alone.
    big, std = "large learning rate", "standard"
    steps = lab.epochs * lab.num_envs * lab.horizon // lab.minibatch
    claims.check("One update of `LAB` is 40 such steps (10 epochs of 4 minibatches of 32).",
                 steps == 40 and lab.epochs == 10 and lab.minibatch == 32, f"{steps} steps per update")
    claims.check("from 10⁻³ to 3·10⁻² (thirty times larger: `dataclasses.replace(LAB, lr=3e-2)`)",
                 lab.lr == 1e-3 and PS2_LARGE_LR == 3e-2, f"LAB.lr {lab.lr}, the near miss's {PS2_LARGE_LR}")
    claims.check("the mean approximate KL per update was more than 9 times the standard run's (more than 100 "
                 "times on three of them)", all(ratio[big] > 9) and (ratio[big] > 100).sum() == 3,
                 f"KL / standard per seed {np.round(ratio[big], 1).tolist()}")
    claims.check("the mean clip fraction was above 0.45 (the standard runs: below 0.3)",
                 min(clip[big]) > 0.45 and max(clip[std]) < 0.3,
                 f"clip fraction {np.round(clip[big], 3).tolist()}, standard {np.round(clip[std], 3).tolist()}")
    start = float(torch.distributions.Normal(0.0, ns["make_agent"](0)[1].detach().exp()).entropy().sum())
    claims.check("a final entropy above 1.6, from 0.84 at the start, where every standard run ended below 0.84",
                 min(entropy[big]) > 1.6 and round(start, 2) == 0.84 and max(entropy[std]) < start,
                 f"final entropy {np.round(entropy[big], 3).tolist()}, at the start {start:.4f}, "
                 f"standard {np.round(entropy[std], 3).tolist()}")
    collapsed = np.array(ret[big]) < -6
    claims.check("on three of the five seeds the run ended worse than the untrained policy, below −6, while on "
                 "the other two it ended above the standard run",
                 collapsed.sum() == 3 and all(np.array(ret[big])[collapsed] < np.array(first[big])[collapsed])
                 and all(above(big)[~collapsed]),
                 f"final return per seed {np.round(ret[big], 3).tolist()}, untrained {np.round(first[big], 3).tolist()}, "
                 f"standard {np.round(ret[std], 3).tolist()}")
    # Part 7's reading of the two rows that change the gradient's scale.
    heavy, raw = "value loss dominates", "no gradient clipping"
    claims.check("(c₁ = 5 instead of 0.5): the loss is one sum", variants[heavy].c1 == 5 and lab.c1 == 0.5
                 and all(config.c1 == lab.c1 for name, config in variants.items() if name != heavy)
                 and variants[raw].max_norm == float("inf"),
                 f"c1: LAB {lab.c1}, {heavy} {variants[heavy].c1}; max_norm of {raw}: {variants[raw].max_norm}")
    claims.check("the norm clip already shortens more than 97 % of the standard run's gradient steps, to less "
                 "than a third of their length (the median over each run); with c₁ = 5 it shortens every one "
                 "of them, to less than a tenth",
                 min(shortened[std]) > 0.97 and max(shrink[std]) < 1 / 3 and min(shortened[heavy]) == 1.0
                 and max(shrink[heavy]) < 0.1,
                 f"standard: shortened {np.round(shortened[std], 3).tolist()}, median factor "
                 f"{np.round(shrink[std], 3).tolist()}; c1 = {variants[heavy].c1}: shortened "
                 f"{np.round(shortened[heavy], 3).tolist()}, median factor {np.round(shrink[heavy], 3).tolist()}")
    claims.check("On seeds 0–4 each of these two rows ended with a return above the standard run's on some seeds "
                 "and below it on others", all(0 < above(name).sum() < len(PS2_SEEDS) for name in (heavy, raw)),
                 f"above on: {heavy} {above(heavy).tolist()}, {raw} {above(raw).tolist()}")
    claims.check(None, set(variants) - {"standard"} == set(exact.BREAK_IT_KL),
                 f"lab rows {sorted(set(variants) - {'standard'})}",
                 about="the lab's rows (the notebook's VARIANTS) are the variants the prediction grades "
                       "(solutions/ps2/exact.py BREAK_IT_KL)")
    inside = lambda name, band: name in ratio and all((ratio[name] > exact.KL_BANDS[band][0])
                                                      & (ratio[name] < exact.KL_BANDS[band][1]))
    outside = {name: ratio[name].round(2).tolist() if name in ratio else "not in the lab"
               for name, band in exact.BREAK_IT_KL.items() if not inside(name, band)}
    claims.check("each variant's KL column lands in the same one of the four bands of your prediction on "
                 "every one of seeds 0–4", not outside,
                 "; ".join(map(show, variants)) + f"; outside the band of BREAK_IT_KL: {outside}",
                 about="each variant's KL over the standard's lies in the band the prediction item's "
                       "answer gives it (solutions/ps2/exact.py BREAK_IT_KL) on every seed")
    return claims.failed


def load_exact(assignment: str):
    """The assignment's exact oracle (solutions/<a>/exact.py), which some answers come from."""
    from rlcourse.course.solutions import load_solution

    return load_solution(ROOT, assignment, "exact")


def ps3() -> list[str]:
    ns = notebook_namespace("ps3", "given_agents")
    train, first_and_last = ns["train"], ns["first_and_last"]
    runs = {agent: np.array([first_and_last(train(agent, seed=s)) for s in PS3_SEEDS])
            for agent in ("reinforce", "ppo", "a2c")}
    for agent, table in runs.items():
        print(f"      [{agent}] first 20% per seed {np.round(table[:, 0], 1).tolist()}, "
              f"last 20% {np.round(table[:, 1], 1).tolist()}")
    lam = {value: np.array([first_and_last(train("ppo", seed=s, lam=value))[1] for s in PS3_SEEDS])
           for value in (0.0, 1.0)}
    print(f"      [lambda] last 20% per seed: {({k: np.round(v, 1).tolist() for k, v in lam.items()})}")
    lr = {value: np.array([first_and_last(train("ppo", seed=s, lr=value))[1] for s in PS3_SEEDS])
          for value in (3e-4, 3e-2)}
    print(f"      [lr] last 20% per seed: {({k: np.round(v, 1).tolist() for k, v in lr.items()})}")
    run_cell(ns, "ps3", "given_sparse")  # defines SparseCartPole (and runs seed 0 once, as students do)
    sparse = [ns["train"]("reinforce", seed=s, env_factory=ns["SparseCartPole"]) for s in PS3_SEEDS]
    rewarded = [int(np.sum(lengths >= 200)) for lengths in sparse]
    print(f"      [sparse] episodes reaching the limit per seed: {rewarded}")
    claims = Claims("ps3")
    first, last = ({agent: table[:, column] for agent, table in runs.items()} for column in (0, 1))
    claims.check("the mean length over the last 20% of episodes was above 150 for REINFORCE with standardised "
                 "returns and for PPO and above 45 for A2C, against below 60 over the first 20% for all three",
                 all(last["reinforce"] > 150) and all(last["ppo"] > 150) and all(last["a2c"] > 45)
                 and all(all(first[agent] < 60) for agent in runs), "see the per-seed figures above")
    claims.check("(on most of seeds 0–9, above 175 of the 200 allowed)",
                 (last["reinforce"] > 175).sum() > 5 and (last["ppo"] > 175).sum() > 5,
                 f"runs above 175: REINFORCE {(last['reinforce'] > 175).sum()}, PPO {(last['ppo'] > 175).sum()}")
    claims.check("(on every one of seeds 0–9 below 120 steps, on most of them below 80)",
                 all(last["a2c"] < 120) and (last["a2c"] < 80).sum() > 5,
                 f"A2C's largest {last['a2c'].max():.1f}, below 80: {(last['a2c'] < 80).sum()}")
    claims.check("(on seeds 0–9, every $\\lambda = 0$ run ended below every $\\lambda = 1$ run)",
                 lam[0.0].max() < lam[1.0].min(), f"lambda 0 at most {lam[0.0].max():.1f}, "
                 f"lambda 1 at least {lam[1.0].min():.1f}")
    claims.check("On seeds 0–9, every run at 3e-2 ended above 180 steps, and every run at 3e-4 below 170",
                 lr[3e-2].min() > 180 and lr[3e-4].max() < 170,
                 f"3e-2 at least {lr[3e-2].min():.1f}; 3e-4 at most {lr[3e-4].max():.1f}")
    claims.check("on each of seeds 0–9 (`make claims` reruns them) not one episode reached the limit",
                 not any(rewarded), f"rewarded episodes per seed {rewarded}")
    exact = load_exact("ps3")
    lambda_answer = ("lambda = 0 lower" if lam[0.0].max() < lam[1.0].min()
                     else "lambda = 0 higher" if lam[0.0].min() > lam[1.0].max() else None)
    sparse_answer = "does not learn" if not any(rewarded) else None
    claims.check(None, {"LAMBDA_PREDICTION": lambda_answer, "SPARSE_PREDICTION": sparse_answer}
                 == exact.EXPERIMENT_ANSWERS, f"lambda: {lambda_answer!r}, sparse: {sparse_answer!r}",
                 about="the answers of the predictions before Experiments 3 and 4 "
                       "(solutions/ps3/exact.py EXPERIMENT_ANSWERS) hold on every one of seeds 0-9")
    return claims.failed


def main(names: list[str]) -> int:
    started, failed = time.perf_counter(), []
    for name in names or ["ps2", "ps3"]:
        failed += {"ps2": ps2, "ps3": ps3}[name]()
    print(f"{len(failed)} claim(s) failed; {time.perf_counter() - started:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
