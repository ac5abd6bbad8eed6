"""`make claims`: reruns the experiments behind every sentence a notebook states about them, under
two numerical configurations, prints each claim's margin, and fails a claim that does not hold on
both by at least its floor.

A notebook's text about its experiments ("on each of seeds 0-4 ...") is a claim about code that
changes (the reference solution, the given training loops, the libraries) and about
floating-point arithmetic that differs from one machine to the next: MKL picks its kernels by
CPU, PyTorch's and NumPy's vectorised loops follow the vector units, OpenBLAS picks its kernels by
core type. A chaotic run (ps2's large learning rate) lands elsewhere after a change in the last
bit, so a sentence that held here was false on an AVX-512 Xeon (issue 30). Each experiment
therefore runs twice, each time in a process of its own: as the notebook runs on this machine
(`native`), and on another floating-point path (`portable`, CONFIGURATIONS below). A claim holds
only if it holds under both, by at least its floor: a sentence that depends on the path fails
here, not on a student's laptop.

What a claim may say (Claim, Bound): bounds on figures, on every seed (the margin is the worst
seed's) or on some seed (the best seed's), never a count of seeds, which another path changes.
A margin is the distance from the bound as a share of the bound's scale (its size, unless the
claim names another); the floor is 10 % unless the claim states its own. Facts about the
notebook's settings ("40 steps per update") are exact. Each claim quotes the sentence it backs
exactly as the source notebook states it, so that editing the sentence without the check (or the
check without the sentence) fails too; a claim without a quote backs a fact the graders rely on
that the notebook must not state (the answer of a prediction). The runs are the notebook's own:
the source notebook's code cells (reference answers included) are executed here, not copied.

Usage: python claims/run.py [ps1] [ps2] [ps3] [--jobs N] [--save FILE | --figures FILE]
  all assignments when none is named; each (assignment, configuration) is one process, N at a
  time (default 2); --save writes the figures measured, --figures judges saved ones without
  running anything.
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import nbformat
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
PS1_SEEDS = range(5)
PS2_SEEDS = range(5)
"""The break-it lab's seeds."""
PS2_NEAR_MISS_SEEDS = range(10)
"""Part 5's large learning rate: a chaotic run, so its sentences speak of ten seeds."""
PS3_SEEDS = range(10)
FLOOR = 0.10
"""The smallest margin a claim may hold by, unless it states its own."""


# --- the two numerical configurations -----------------------------------------------------------

def _numpy_dispatch_targets() -> str:
    """NumPy's optional vectorised loops that this CPU runs (AVX2, AVX-512, ...): the portable
    configuration switches them off. The baseline cannot be switched off, and naming a target the
    CPU lacks is refused, so the list is this machine's."""
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__

    return ",".join(target for target in __cpu_dispatch__ if __cpu_features__.get(target))


@dataclasses.dataclass(frozen=True)
class Configuration:
    """How one run of the experiments does its floating-point arithmetic."""

    name: str
    about: str
    """What it changes, in a line."""
    environment: Callable[[], dict]
    """Variables set before the libraries load (they read them once, at start-up)."""
    deterministic: bool = False
    """torch.use_deterministic_algorithms(True), where it applies."""

    def apply(self, torch) -> None:
        """The settings PyTorch takes at run time, after the notebook's own setup cell ran."""
        if self.deterministic:
            torch.use_deterministic_algorithms(True)


def _portable_environment() -> dict:
    xla = os.environ.get("XLA_FLAGS", "")
    return {
        "MKL_CBWR": "COMPATIBLE",            # PyTorch's BLAS: MKL's generic kernels, not the CPU's
        "ATEN_CPU_CAPABILITY": "default",    # PyTorch's own loops without AVX2 or AVX-512
        "OPENBLAS_CORETYPE": "Prescott",     # NumPy's BLAS: SSE3 kernels, no fused multiply-add
        "NPY_DISABLE_CPU_FEATURES": _numpy_dispatch_targets(),
        "XLA_FLAGS": f"{xla} --xla_cpu_max_isa=SSE4_2 --xla_cpu_multi_thread_eigen=false".strip(),
    }


CONFIGURATIONS = (
    Configuration("native", "as a student runs the notebook here: this CPU's kernels, the notebook's "
                  "own thread settings", dict),
    # Not a second thread (PyTorch's or OpenBLAS's): no operation on these small networks is large
    # enough to be split, so 1 and 2 threads gave the same numbers to the last bit, and on a
    # shared machine OpenMP's waiting threads made a ps2 run 12 times as costly.
    Configuration("portable", "another floating-point path: MKL's compatible kernels, PyTorch's loops "
                  "without AVX and its deterministic algorithms, OpenBLAS without FMA, NumPy without its "
                  "AVX loops, XLA limited to SSE4.2", _portable_environment, deterministic=True),
)
BY_NAME = {configuration.name: configuration for configuration in CONFIGURATIONS}


# --- running the source notebook's cells --------------------------------------------------------

def _cells(assignment: str):
    return nbformat.read(ROOT / "source" / assignment / f"{assignment}.ipynb", as_version=4).cells


def notebook_namespace(assignment: str, last_cell: str) -> dict:
    """The globals of the source notebook run from the top down to `last_cell`, tests skipped."""
    import matplotlib

    matplotlib.use("Agg")
    namespace: dict = {}
    for cell in _cells(assignment):
        nbgrader = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "code" or nbgrader.get("grade"):
            continue
        exec(compile(cell.source, f"{assignment}:{nbgrader.get('grade_id')}", "exec"), namespace)
        if nbgrader.get("grade_id") == last_cell:
            return namespace
    raise LookupError(f"{assignment}: no code cell {last_cell!r}")


def defined(namespace: dict, assignment: str, grade_id: str, name: str):
    """Runs only the top-level statements of one of the source notebook's cells that define `name`
    (an assignment, a class or a function) in `namespace` and returns it: a lab's table of
    variants, or an environment, without the runs that follow it in the cell."""
    def defines(statement) -> bool:
        if isinstance(statement, (ast.ClassDef, ast.FunctionDef)):
            return statement.name == name
        return isinstance(statement, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == name for target in statement.targets)

    for cell in _cells(assignment):
        if cell.metadata.get("nbgrader", {}).get("grade_id") == grade_id:
            body = [statement for statement in ast.parse(cell.source).body if defines(statement)]
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


# --- measuring: one configuration's figures, in a process of its own ----------------------------

# Part 5's near miss in ps2: the lab's run with only the learning rate changed, to this.
PS2_LARGE_LR = 3e-2
LARGE_LR = "large learning rate"


def measure_ps1(configuration: Configuration) -> dict:
    """Part 4's two training runs from each of PS1_SEEDS, with the default rewards (this process has
    no student id), as the exact return after the last update. JAX takes the configuration from
    XLA_FLAGS alone."""
    namespace = notebook_namespace("ps1", "given_training")
    train, runs, seeds = namespace["train"], {"reinforce": [], "ppo": []}, PS1_SEEDS
    for seed in seeds:
        runs["reinforce"].append(train(seed=seed, method="reinforce", epochs=1))
        runs["ppo"].append(train(seed=seed, method="ppo", epochs=3))
    return {"seeds": list(seeds), "params": namespace["PARAMS"],
            "best": float(namespace["GOAL_REWARD"] + 1.5 * namespace["STEP_COST"]),
            "uniform": float(runs["ppo"][0][1][0]),
            **{method: [float(history[-1]) for _, history in results] for method, results in runs.items()},
            "fingerprint": [float(np.sum(theta)) for results in runs.values() for theta, _ in results]}


def measure_ps2(configuration: Configuration) -> dict:
    """Part 7's standard run and each row of the break-it lab from each of PS2_SEEDS, and Part 5's
    large learning rate with the standard run from each of PS2_NEAR_MISS_SEEDS: per run and seed,
    the mean approximate KL and clip fraction per update, the first and last return, the last
    entropy, and of the gradient steps (their global norm before the lab's clip): the share the
    clip shortened (in the row without it: would have shortened), the median factor it shortened
    them by, and the shortest norm over the clip's threshold."""
    namespace = notebook_namespace("ps2", "ppo_update")
    torch, lab, replace = namespace["torch"], namespace["LAB"], namespace["dataclasses"].replace
    configuration.apply(torch)
    variants = defined(namespace, "ps2", "break_it_lab", "VARIANTS")
    runs = {"standard": lab, **variants, LARGE_LR: replace(lab, lr=PS2_LARGE_LR)}
    seeds = {name: PS2_NEAR_MISS_SEEDS if name in ("standard", LARGE_LR) else PS2_SEEDS for name in runs}
    stats = ("kl", "clip", "return", "first_return", "entropy", "shortened", "shrink", "least_norm")
    figures = {name: {stat: [] for stat in stats} for name in runs}
    for name, config in runs.items():
        for seed in seeds[name]:
            with gradient_norms(torch) as calls:
                history = namespace["train"](config, seed=seed)[0]
            norms, row = np.array(calls), figures[name]
            over = norms > lab.max_norm
            row["kl"].append(float(history["approx_kl"].mean()))
            row["clip"].append(float(history["clip_fraction"].mean()))
            row["return"].append(float(history["return"][-1]))
            row["first_return"].append(float(history["return"][0]))
            row["entropy"].append(float(history["entropy"][-1]))
            row["shortened"].append(float(over.mean()))
            row["shrink"].append(float(np.median(lab.max_norm / norms[over])) if over.any() else 1.0)
            row["least_norm"].append(float(norms.min() / lab.max_norm))
    log_std = namespace["make_agent"](0)[1].detach()
    start = float(torch.distributions.Normal(0.0, log_std.exp()).entropy().sum())
    return {"seeds": {name: list(values) for name, values in seeds.items()}, "runs": figures,
            "start_entropy": start, "settings": {name: dataclasses.asdict(config) for name, config in runs.items()},
            "fingerprint": [value for name in runs for value in figures[name]["return"]]}


def measure_ps3(configuration: Configuration) -> dict:
    """Experiment 1's three agents, Experiment 3's PPO with lambda = 0 and 1 ("lambda 0", "lambda
    1"), Experiment 5's with learning rates 3e-4 and 3e-2 ("lr 0.0003", "lr 0.03") and Experiment
    4's sparse reward from each of PS3_SEEDS: the mean episode length over the first and the last 20 % of
    episodes, and per sparse run how many episodes reached the limit and the longest one. NumPy
    takes the configuration from its variables alone."""
    namespace, seeds = notebook_namespace("ps3", "given_agents"), PS3_SEEDS
    final_actors = []

    class RecordingAdam(namespace["Adam"]):
        """The notebook's Adam, keeping each optimiser's parameters: the fingerprint is the actor's
        sum after training (episode lengths can agree where the parameters do not)."""

        def __init__(self, params, *args, **kwargs):
            super().__init__(params, *args, **kwargs)
            final_actors.append(params)

    namespace["Adam"] = RecordingAdam
    train, first_and_last = namespace["train"], namespace["first_and_last"]
    sparse_env = defined(namespace, "ps3", "given_sparse", "SparseCartPole")

    def run(**settings):
        lengths = train(**settings)
        actor = final_actors[-2]  # train makes the actor's optimiser, then the critic's
        fingerprint.append(float(sum(np.sum(value) for value in actor.values())))
        return lengths

    fingerprint: list = []
    agents = {agent: [first_and_last(run(agent=agent, seed=seed)) for seed in seeds]
              for agent in ("reinforce", "ppo", "a2c")}
    lam = {f"lambda {value:g}": [first_and_last(run(agent="ppo", seed=seed, lam=value)) for seed in seeds]
           for value in (0.0, 1.0)}
    lr = {f"lr {value:g}": [first_and_last(run(agent="ppo", seed=seed, lr=value)) for seed in seeds]
          for value in (3e-4, 3e-2)}
    sparse = [run(agent="reinforce", seed=seed, env_factory=sparse_env) for seed in seeds]
    runs = {**agents, **lam, **lr}
    return {"seeds": list(seeds),
            "first": {name: [pair[0] for pair in pairs] for name, pairs in runs.items()},
            "last": {name: [pair[1] for pair in pairs] for name, pairs in runs.items()},
            "sparse_rewarded": [int(np.sum(lengths >= 200)) for lengths in sparse],
            "sparse_longest": [int(np.max(lengths)) for lengths in sparse],
            "fingerprint": fingerprint}


MEASURE = {"ps1": measure_ps1, "ps2": measure_ps2, "ps3": measure_ps3}


def measure_all(assignments: Sequence[str], *, jobs: int) -> dict:
    """{assignment: {configuration: figures}}: each pair measured by `claims/run.py --measure` in a
    process of its own (the configurations' variables take effect only at start-up), `jobs` at a
    time; raises if one fails."""
    pending = [(assignment, configuration) for assignment in assignments for configuration in CONFIGURATIONS]
    running, figures = [], {assignment: {} for assignment in assignments}
    with tempfile.TemporaryDirectory(prefix="claims-") as folder:
        while pending or running:
            while pending and len(running) < jobs:
                assignment, configuration = pending.pop(0)
                output = Path(folder) / f"{assignment}-{configuration.name}.json"
                environment = {key: value for key, value in os.environ.items()
                               if key not in ("JUPYTERHUB_USER", "RLCOURSE_STUDENT")}  # the defaults
                environment.update(configuration.environment())
                process = subprocess.Popen([sys.executable, __file__, "--measure", assignment,
                                            "--configuration", configuration.name, "--output", str(output)],
                                           env=environment, stdout=subprocess.DEVNULL)
                running.append((assignment, configuration, output, process, time.perf_counter()))
            time.sleep(0.2)
            for entry in [entry for entry in running if entry[3].poll() is not None]:
                running.remove(entry)
                assignment, configuration, output, process, started = entry
                if process.returncode:
                    raise RuntimeError(f"measuring {assignment} ({configuration.name}) failed: "
                                       f"exit status {process.returncode}")
                figures[assignment][configuration.name] = json.loads(output.read_text())
                print(f"[{assignment}] measured ({configuration.name}) in {time.perf_counter() - started:.0f} s",
                      flush=True)
    return figures


# --- judging: claims as bounds on the figures ---------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Bound:
    """One inequality a claim makes about a figure: above (or below) `limit`, on every seed or on
    some seed. Its margin, under one configuration, is the worst seed's (every) or the best seed's
    (some) distance from the limit, as a share of `scale` (|limit| unless given): negative when
    the inequality fails."""

    what: str
    values: tuple
    limit: float
    above: bool
    on: str = "every"
    scale: float | None = None

    def __post_init__(self):
        if self.on not in ("every", "some"):
            raise ValueError(f"on={self.on!r}: 'every' or 'some'")
        if not (self.scale or self.limit):
            raise ValueError(f"{self.what}: a bound at 0 needs a scale")

    def margin(self) -> float:
        values = np.asarray(self.values, dtype=float)
        distances = (values - self.limit) if self.above else (self.limit - values)
        distances = distances / (self.scale or abs(self.limit))
        return float(distances.min() if self.on == "every" else distances.max())

    def describe(self) -> str:
        values = [round(value, 3) for value in np.asarray(self.values, dtype=float).tolist()]
        side = ">" if self.above else "<"
        where = "over the seeds" if len(values) == 1 else f"on {self.on} seed"
        return f"{self.what} {side} {self.limit:.4g} {where}: {values}"


def above(what: str, values, limit: float, **kwargs) -> Bound:
    return Bound(what, tuple(np.ravel(values).tolist()), float(limit), True, **kwargs)


def below(what: str, values, limit: float, **kwargs) -> Bound:
    return Bound(what, tuple(np.ravel(values).tolist()), float(limit), False, **kwargs)


@dataclasses.dataclass(frozen=True)
class Fact:
    """An exact statement about the notebook's settings or the graders' answers (no margin)."""

    what: str
    holds: bool


@dataclasses.dataclass(frozen=True)
class Claim:
    """A sentence of the notebook and how one configuration's figures back it."""

    quote: str | None
    """Exactly as the source notebook states it; None for a fact the notebook must not state."""
    check: Callable[[dict], list]
    """figures of one configuration -> the Bounds and Facts the sentence makes."""
    floor: float = FLOOR
    about: str = ""
    """What an unquoted claim backs."""


@dataclasses.dataclass(frozen=True)
class Verdict:
    claim: Claim
    quoted: bool
    margin: float | None
    """The least margin over the claim's bounds and the configurations (None: facts only)."""
    facts_hold: bool
    lines: tuple[str, ...]

    @property
    def holds(self) -> bool:
        return self.quoted and self.facts_hold and (self.margin is None or self.margin >= self.claim.floor)


def prose(assignment: str) -> str:
    """The source notebook's markdown, with line breaks folded, as a reader reads it."""
    return " ".join(" ".join(cell.source.split()) for cell in _cells(assignment) if cell.cell_type == "markdown")


def judge(claim: Claim, figures: dict, text: str) -> Verdict:
    """The claim under every configuration's figures: its least margin and what it rests on."""
    margins, facts_hold, lines = [], True, []
    for name, measured in figures.items():
        for part in claim.check(measured):
            if isinstance(part, Fact):
                facts_hold &= part.holds
                lines.append(f"{name}: {part.what}: {'yes' if part.holds else 'NO'}")
            else:
                margins.append(part.margin())
                lines.append(f"{name}: {part.describe()}; margin {part.margin():+.1%}")
    quoted = claim.quote is None or " ".join(claim.quote.split()) in text
    return Verdict(claim, quoted, min(margins) if margins else None, facts_hold, tuple(lines))


def report(assignment: str, verdicts: list[Verdict]) -> None:
    for verdict in verdicts:
        claim = verdict.claim
        if verdict.holds:
            state = "holds"
        elif not verdict.quoted:
            state = "NOT QUOTED in the notebook"
        else:
            state = "FAILS"
        margin = "exact" if verdict.margin is None else f"margin {verdict.margin:+.1%} (floor {claim.floor:.0%})"
        print(f"[{assignment}] {state}, {margin}: {claim.about or repr(claim.quote)}")
        for line in verdict.lines:
            print(f"      {line}")


def paths_differ(assignment: str, figures: dict) -> str:
    """Whether the configurations took different floating-point paths: how many of the runs'
    fingerprints (a final parameter sum or return per run, at full precision) differ."""
    native, portable = (np.asarray(figures[configuration.name]["fingerprint"]) for configuration in CONFIGURATIONS)
    differ = int(np.sum(native != portable))
    return f"[{assignment}] the two configurations' runs differ in the last digits on {differ} of {len(native)} runs"


def load_exact(assignment: str):
    """The assignment's exact oracle (solutions/<a>/exact.py), which some answers come from."""
    sys.path.insert(0, str(ROOT))
    from rlcourse.course.solutions import load_solution

    return load_solution(ROOT, assignment, "exact")


# --- the claims -----------------------------------------------------------------------------------

PS1_DEFAULTS = {"seed": 11, "clip": 0.2, "step_cost": -0.01, "goal_reward": 1.0}


def ps1_claims() -> list[Claim]:
    """Part 4's reading of the result. A ps1 run's spread from seed to seed is about 0.4 % of the
    way from the uniform policy's return to the best one, and its figures were the same to the
    last bit under both configurations: its floor is 3 % of that way, the scale its margins are
    measured on."""
    def runs(f):
        way = f["best"] - f["uniform"]
        return [Fact("the runs used the default rewards", f["params"] == PS1_DEFAULTS),
                above("REINFORCE's final exact return", f["reinforce"], 0.93, scale=way),
                above("the clipped surrogate's final exact return", f["ppo"], 0.95, scale=way)]

    return [Claim("ends above 0.93 with REINFORCE and above 0.95 with the clipped surrogate (3 epochs), from "
                  "seed 0 as from each of seeds 0–4", runs, floor=0.03)]


def _runs(f: dict, name: str, stat: str, seeds: int | None = None) -> np.ndarray:
    values = np.asarray(f["runs"][name][stat], dtype=float)
    return values if seeds is None else values[:seeds]


def _kl_ratio(f: dict, name: str) -> np.ndarray:
    """A run's mean approximate KL per update over the standard run's, seed by seed."""
    kl = _runs(f, name, "kl")
    return kl / _runs(f, "standard", "kl", len(kl))


def _return_ratio(f: dict, name: str, to: str = "standard") -> np.ndarray:
    """A run's final return over another's (or over its untrained policy's, `to="first_return"`),
    seed by seed. Every return on ReachEnv is negative (minus distances), so a ratio above 1 is a
    worse return and one below 1 a better one."""
    ret = _runs(f, name, "return")
    other = _runs(f, name, "first_return") if to == "first_return" else _runs(f, to, "return", len(ret))
    return ret / other


def ps2_claims() -> list[Claim]:
    exact = load_exact("ps2")
    lab = lambda f: f["settings"]["standard"]
    big, std, heavy, raw = LARGE_LR, "standard", "value loss dominates", "no gradient clipping"
    lab_seeds = len(PS2_SEEDS)

    def bands(f):
        parts = [Fact("the lab's rows (VARIANTS) are the variants the prediction grades (BREAK_IT_KL)",
                      set(f["settings"]) - {std, big} == set(exact.BREAK_IT_KL))]
        for name, band in exact.BREAK_IT_KL.items():
            low, high = exact.KL_BANDS[band]
            if low > 0:
                parts.append(above(f"{name}: KL / standard ({band})", _kl_ratio(f, name), low))
            if np.isfinite(high):
                parts.append(below(f"{name}: KL / standard ({band})", _kl_ratio(f, name), high))
        return parts

    return [
        # Part 5's near miss: the learning rate alone.
        Claim("One update of `LAB` is 40 such steps (10 epochs of 4 minibatches of 32).", lambda f: [
            Fact(f"{lab(f)['epochs']} epochs of {lab(f)['num_envs'] * lab(f)['horizon'] // lab(f)['minibatch']} "
                 f"minibatches of {lab(f)['minibatch']}",
                 (lab(f)["epochs"], lab(f)["num_envs"] * lab(f)["horizon"], lab(f)["minibatch"]) == (10, 128, 32))]),
        Claim("from 10⁻³ to 3·10⁻² (thirty times larger: `dataclasses.replace(LAB, lr=3e-2)`)", lambda f: [
            Fact(f"LAB.lr {lab(f)['lr']}, the near miss's {f['settings'][big]['lr']}",
                 lab(f)["lr"] == 1e-3 and f["settings"][big]["lr"] == 3e-2
                 and {**f["settings"][big], "lr": 1e-3} == lab(f))]),
        Claim("on each of seeds 0–9 the mean approximate KL per update was more than 5 times the standard run's",
              lambda f: [above("large learning rate: KL / standard", _kl_ratio(f, big), 5)]),
        Claim("the mean clip fraction was above 0.4 (the standard runs: below a third)", lambda f: [
            above("large learning rate: mean clip fraction", _runs(f, big, "clip"), 0.4),
            below("standard: mean clip fraction", _runs(f, std, "clip"), 1 / 3)]),
        # The entropy and the return of this chaotic run land anywhere from one path to the next (on seed 5
        # one configuration's final entropy grew to 1.33, the other's shrank to 0.63): only what
        # some seeds show is said of them.
        Claim("on some of these seeds the policy's spread grew far beyond its start (a final entropy above 3, "
              "from 0.84) and the run ended worse than the untrained policy; on others it ended better than the "
              "standard run", lambda f: [
                  Fact(f"the entropy at the start is {f['start_entropy']:.4f}", round(f["start_entropy"], 2) == 0.84),
                  above("large learning rate, on one seed: final entropy / 3 and final return / the untrained "
                        "policy's, the lesser", np.minimum(_runs(f, big, "entropy") / 3,
                                                           _return_ratio(f, big, "first_return")), 1.0, on="some"),
                  below("large learning rate: final return / the standard run's", _return_ratio(f, big), 1.0, on="some")]),
        # Part 7's reading of the table.
        # The lab's rows at LAB's learning rate are not chaotic (both configurations agree to 1e-12),
        # so the floor guards only against the seeds: K = 1 on seed 4 (0.63 of the standard's KL
        # against the band's 0.7) is the row nearest an edge.
        Claim("each variant's KL column lands in the same one of the four bands of your prediction on every one "
              "of seeds 0–4", bands, floor=0.05),
        Claim("on some of seeds 0–4 a broken variant, the clip without the min, ended above the standard run",
              lambda f: [below("clip without min: final return / the standard run's",
                               _return_ratio(f, "clip without min"), 1.0, on="some")]),
        Claim("the no-entropy row ended above it on some of these seeds and below it on others", lambda f: [
            below("no entropy: final return / the standard run's", _return_ratio(f, "no entropy"), 1.0, on="some"),
            above("no entropy: final return / the standard run's", _return_ratio(f, "no entropy"), 1.0, on="some")]),
        # The second explanation's prompt: the two rows that change the gradient's scale.
        Claim("with c₁ = 5 the lab's norm clip shortened every one of the run's gradient steps, to less than a "
              "tenth of its length (the median over each run)", lambda f: [
                  Fact(f"c1: LAB {lab(f)['c1']}, {heavy} {f['settings'][heavy]['c1']}",
                       lab(f)["c1"] == 0.5 and f["settings"][heavy]["c1"] == 5),
                  above(f"{heavy}: the shortest gradient norm over the clip's threshold", _runs(f, heavy, "least_norm"), 1.0),
                  below(f"{heavy}: median factor of the shortened steps", _runs(f, heavy, "shrink"), 0.1)]),
        Claim("in the standard run it shortened more than 85 % of them, to less than a third", lambda f: [
            above("standard: share of the steps shortened", _runs(f, std, "shortened", lab_seeds), 0.85),
            below("standard: median factor of the shortened steps", _runs(f, std, "shrink", lab_seeds), 1 / 3)]),
        Claim("without the clip (`max_norm=float(\"inf\")`) none is", lambda f: [
            Fact(f"max_norm of {raw}: {f['settings'][raw]['max_norm']}", f["settings"][raw]["max_norm"] == float("inf"))]),
        # The visible check after Part 7's run promises a student that a correct solution passes it.
        Claim(None, lambda f: [
            above("standard, seed 0: final return minus the untrained policy's",
                  _runs(f, std, "return", 1) - _runs(f, std, "first_return", 1), 0.5)],
              about="the visible check test_training (seed 0's return gains more than 0.5) passes a correct solution"),
    ]


def _episodes(f: dict, which: str, name: str) -> np.ndarray:
    """Mean episode length over the first or last 20 % of episodes of a ps3 run, seed by seed."""
    return np.asarray(f[which][name], dtype=float)


def _apart(f: dict, one: str, other: str) -> float:
    """How far every run of one setting ended above every run of the other, whichever is on top:
    the lowest of the higher over the highest of the lower (above 1 when they do not overlap)."""
    a, b = _episodes(f, "last", one), _episodes(f, "last", other)
    return max(a.min() / b.max(), b.min() / a.max())


def ps3_claims() -> list[Claim]:
    exact = load_exact("ps3")
    agents = {"reinforce": "REINFORCE (standardised)", "ppo": "PPO", "a2c": "A2C"}
    lambda_answer = lambda f: ("lambda = 0 lower" if _episodes(f, "last", "lambda 1").min()
                               > _episodes(f, "last", "lambda 0").max() else "not lambda = 0 lower")
    return [
        Claim("the mean length over the last 20% of episodes was above 140 for REINFORCE with standardised "
              "returns and for PPO and above 45 for A2C, against below 65 over the first 20% for all three",
              lambda f: [above(f"{agents['reinforce']}: last 20 %", _episodes(f, "last", "reinforce"), 140),
                         above(f"{agents['ppo']}: last 20 %", _episodes(f, "last", "ppo"), 140),
                         above(f"{agents['a2c']}: last 20 %", _episodes(f, "last", "a2c"), 45),
                         *[below(f"{label}: first 20 %", _episodes(f, "first", agent), 65)
                           for agent, label in agents.items()]]),
        Claim("at this budget it ends above where it started but far from the limit (below 140 steps on every "
              "one of seeds 0–9)", lambda f: [
                  above("A2C: last 20 % over first 20 %", _episodes(f, "last", "a2c") / _episodes(f, "first", "a2c"), 1.0),
                  below("A2C: last 20 %", _episodes(f, "last", "a2c"), 140)]),
        Claim("on every one of seeds 0–9, under both of `make claims`' numerical configurations, every run of "
              "one of them ended above every run of the other", lambda f: [
                  above("lambda 0 against lambda 1: the lowest last 20 % of the higher over the highest of the "
                        "lower", [_apart(f, "lambda 0", "lambda 1")], 1.0)]),
        Claim("it is the same on every one of seeds 0–9", lambda f: [
            Fact(f"episodes that reached the limit per seed: {f['sparse_rewarded']}",
                 len(set(f["sparse_rewarded"])) == 1),
            # The count stays as it is while no episode comes near the limit: its margin.
            below("sparse reward: the longest episode", f["sparse_longest"], 200)]),
        Claim("all three rates improve on where they started, and on each of seeds 0–9 every run at 3e-2 ended "
              "above every run at 3e-4", lambda f: [
                  *[above(f"PPO at {label}: last 20 % over first 20 %",
                          _episodes(f, "last", name) / _episodes(f, "first", name), 1.0)
                    for name, label in (("lr 0.0003", "lr 3e-4"), ("ppo", "lr 3e-3 (Experiment 1's)"),
                                        ("lr 0.03", "lr 3e-2"))],
                  above("PPO at lr 3e-2 against lr 3e-4: the lowest last 20 % of 3e-2 over the highest of 3e-4",
                        [_episodes(f, "last", "lr 0.03").min() / _episodes(f, "last", "lr 0.0003").max()], 1.0)]),
        # The visible checks after Experiment 1 (seeds 0 and 1, their mean) promise a student that a
        # correct solution passes them.
        Claim(None, lambda f: [
            *[part for agent, gain, least in (("reinforce", 40, 100), ("ppo", 40, 100), ("a2c", 15, 40))
              for part in (above(f"{agents[agent]}, seeds 0 and 1: last 20 % minus first 20 %",
                                 [np.mean(_episodes(f, "last", agent)[:2] - _episodes(f, "first", agent)[:2])], gain),
                           above(f"{agents[agent]}, seeds 0 and 1: last 20 %",
                                 [np.mean(_episodes(f, "last", agent)[:2])], least))]],
              about="the visible checks test_training (seeds 0 and 1) pass a correct solution"),
        Claim(None, lambda f: [
            Fact(f"lambda: {lambda_answer(f)!r}; sparse: "
                 f"{'does not learn' if not any(f['sparse_rewarded']) else 'some episodes rewarded'}",
                 {"LAMBDA_PREDICTION": lambda_answer(f),
                  "SPARSE_PREDICTION": "does not learn" if not any(f["sparse_rewarded"]) else None}
                 == exact.EXPERIMENT_ANSWERS)],
              about="the answers of the predictions before Experiments 3 and 4 (solutions/ps3/exact.py "
                    "EXPERIMENT_ANSWERS) hold on every one of seeds 0-9"),
    ]


CLAIMS: dict[str, Callable[[], list[Claim]]] = {"ps1": ps1_claims, "ps2": ps2_claims, "ps3": ps3_claims}
"""assignment -> its claims (a function: some read the oracle)."""


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("assignments", nargs="*", metavar="ASSIGNMENT", help=", ".join(MEASURE))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--save", type=Path)
    parser.add_argument("--figures", type=Path)
    parser.add_argument("--measure", choices=list(MEASURE), help=argparse.SUPPRESS)
    parser.add_argument("--configuration", choices=list(BY_NAME), help=argparse.SUPPRESS)
    parser.add_argument("--output", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:  # one (assignment, configuration), in the process measure_all started
        figures = MEASURE[args.measure](BY_NAME[args.configuration])
        args.output.write_text(json.dumps(figures))
        return 0
    unknown = sorted(set(args.assignments) - set(MEASURE))
    if unknown:
        parser.error(f"no claims for {', '.join(unknown)} (there are for {', '.join(MEASURE)})")
    started = time.perf_counter()
    assignments = args.assignments or list(MEASURE)
    for configuration in CONFIGURATIONS:
        print(f"configuration {configuration.name}: {configuration.about}")
    if args.figures:
        figures = {name: value for name, value in json.loads(args.figures.read_text()).items() if name in assignments}
    else:
        figures = measure_all(assignments, jobs=args.jobs)
    if args.save:
        args.save.write_text(json.dumps(figures, indent=1))
    failed = 0
    for assignment in assignments:
        print(paths_differ(assignment, figures[assignment]))
        verdicts = [judge(claim, figures[assignment], prose(assignment)) for claim in CLAIMS[assignment]()]
        report(assignment, verdicts)
        failed += sum(not verdict.holds for verdict in verdicts)
    print(f"{failed} claim(s) failed; {time.perf_counter() - started:.0f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
