"""Benchmark: what one call into a confined worker costs, and how much of it is the student's program.

A ps1 grading makes about 930 calls into the student's worker, 720 of them in the two training
items (a rollout, then one gradient of `policy_loss` per epoch, for 40 updates from 3 seeds).
This starts one worker as grading starts it (the course's limits, its confinement, the served
compilation cache), runs the cells of a ps1 demo notebook in it, and times, as medians of
`--calls` calls each, every kind of request a training step makes next to requests that carry
the same data and compute nothing:

* `nothing`: a request that carries nothing (reading one notebook variable): the round trip;
* `gradient`: `policy_loss`'s gradient on a 256-episode batch, compiled once, as the items ask;
* `rollout`: the given `rollout` of 256 episodes, as the items ask;
* `batch in`: a function that ignores the same batch: carrying it to the worker;
* `batch out`: a function that returns a kept batch: carrying it back;
* inside the worker, the same gradient and rollout called in a loop by a cell: the programs alone;
* in this process, the pieces of carrying the batch: encoding the request (base64 and JSON),
  decoding it, and making JAX arrays of its numpy arrays, as the worker does.

    .venv/bin/python benchmarks/worker_calls.py [--student ada] [--calls 200] [--repeats 2]

A measurement, not a test: it prints medians and never fails on a threshold.
"""
from __future__ import annotations

import argparse
import inspect
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rlcourse.course.directory import Course  # noqa: E402
from rlcourse.course.submission import load_submission  # noqa: E402
from rlcourse.demo import demo_notebooks  # noqa: E402
from rlcourse.grading.pipeline import given_code_cache  # noqa: E402
from rlcourse.worker.launchers import WorkerOptions, make_launcher  # noqa: E402

PROBES = """
def _ignores_the_batch(theta, records, method):
    return 0.0


_kept_batch = rollout(jnp.zeros(3), jax.random.key(5), 256, 8)


def _returns_a_kept_batch(theta, key, batch_size, horizon):
    return _kept_batch
"""

INSIDE = """
import statistics
import time

import numpy as _np

_theta, _key = jnp.zeros(3), jax.random.key(5)
_, _records = rollout(_theta, _key, 256, 8)
_gradient = jax.jit(jax.value_and_grad(policy_loss), static_argnums=2)

{median_ms}

print("INSIDE", median_ms(lambda: _np.asarray(_gradient(_theta, _records, "ppo")[1]), {count}),
      median_ms(lambda: _np.asarray(rollout(_theta, _key, 256, 8)[1]["reward"]), {count}))
"""
"""The same gradient and rollout called in a loop by a cell, timed by `median_ms` itself."""


def median_ms(call, count: int) -> float:
    call()
    spent = []
    for _ in range(count):
        started = time.perf_counter()
        call()
        spent.append(time.perf_counter() - started)
    return statistics.median(spent) * 1e3


def message_pieces(records: dict, count: int) -> dict[str, float]:
    """What carrying `records` costs in one process: the wire format both ways, then the arrays
    the worker makes of them (rlcourse.worker.frameworks.JaxFramework.array_to_native)."""
    import json

    import jax.numpy as jnp

    from rlcourse.worker import protocol

    arguments = dict(function="policy_loss", args=[np.zeros(3, np.float32), records, "ppo"], kwargs={},
                     grad_wrt=["theta"], compiled=True)
    body = json.dumps({"id": "0", "op": "call", "arguments": protocol.encode(arguments)})
    decoded = protocol.decode(json.loads(body)["arguments"])
    arrays = [decoded["args"][0], *decoded["args"][1].values()]
    return {f"encode ({len(body) // 1000} kB)": median_ms(lambda: json.dumps(
                {"id": "0", "op": "call", "arguments": protocol.encode(arguments)}), count),
            "decode": median_ms(lambda: protocol.decode(json.loads(body)["arguments"]), count),
            "JAX arrays": median_ms(lambda: [jnp.asarray(array) for array in arrays], count)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--student", default="ada", help="a ps1 demo student whose cells are run")
    parser.add_argument("--calls", type=int, default=200, help="calls per median")
    parser.add_argument("--repeats", type=int, default=2, help="rounds of every kind of call")
    options = parser.parse_args()

    course = Course(ROOT)
    assignment = course.assignment("ps1")
    cache = given_code_cache(assignment)
    launcher = make_launcher(WorkerOptions(assignment.framework, assignment.limits,
                                           compile_cache=str(cache) if cache.is_dir() else None))
    worker = launcher.launch()
    try:
        cells = load_submission(demo_notebooks(course)[options.student]).cells
        for cell in cells:
            worker.request("run_cell", dict(index=cell.index, source=cell.source), timeout=120)
        worker.request("run_cell", dict(index=len(cells), source=PROBES), timeout=60)
        theta, key = np.zeros(3, np.float32), np.array([0, 5], np.uint32)
        records = worker.request("call", dict(function="rollout", args=[theta, key, 256, 8], kwargs={}),
                                 timeout=60)["value"][1]

        def call(function, args, **extra):
            return lambda: worker.request("call", dict(function=function, args=args, kwargs={}, **extra),
                                          timeout=60)

        kinds = {
            "nothing": lambda: worker.request("get", dict(names=["GOAL"]), timeout=60),
            "gradient": call("policy_loss", [theta, records, "ppo"], grad_wrt=["theta"], compiled=True),
            "rollout": call("rollout", [theta, key, 256, 8]),
            "batch in": call("_ignores_the_batch", [theta, records, "ppo"]),
            "batch out": call("_returns_a_kept_batch", [theta, key, 256, 8]),
        }
        print(f"ps1, {options.student}'s cells in a confined worker; medians of {options.calls} calls, ms")
        for kind in kinds.values():
            kind()
        for round_number in range(options.repeats):
            medians = {}
            for name, kind in kinds.items():
                spent = []
                for _ in range(options.calls):
                    started = time.perf_counter()
                    kind()
                    spent.append(time.perf_counter() - started)
                medians[name] = statistics.median(spent) * 1e3
            print(f"  round {round_number + 1}: " + ", ".join(f"{name} {ms:.2f}" for name, ms in medians.items()))
        worker.request("run_cell", dict(index=len(cells) + 1, source=INSIDE.replace("{median_ms}", inspect.getsource(median_ms)).replace(
                           "{count}", str(options.calls))),
                       timeout=120)
        inside = [line for line in worker.output_tail("stdout.txt").splitlines() if line.startswith("INSIDE")]
        gradient, rollout = map(float, inside[-1].split()[1:3])
        print(f"  inside the worker, called by a cell: gradient {gradient:.2f}, rollout {rollout:.2f}")
        pieces = message_pieces(records, options.calls)
        print("  the gradient's request in this process: " + ", ".join(f"{name} {ms:.2f}" for name, ms in pieces.items()))
    finally:
        worker.kill()
        launcher.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
