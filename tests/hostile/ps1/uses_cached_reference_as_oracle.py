"""Answers exact_return with the reference's own compiled programs (issue 29, finding 5): the
grader's warm-up compiled the instructor's exact_return at every horizon the graders ask for,
and every worker could load those executables from the JAX compilation cache and run them. An
exact_return that was never written went from 30/42 to 37/42 this way.

This exact_return loads every cached program it can find (as reads_hlo_from_the_compile_cache
looks for them), runs each on the always-left policy, whose return is horizon x STEP_COST, to
learn which horizon it was compiled for, and answers through `jax.pure_callback`, with central
finite differences as its derivative (`jax.custom_jvp`). Without an oracle it raises
NotImplementedError, as the release's stub does. The entry's name gives it the default rewards,
those the warm-up compiled with (otherwise the oracle's numbers would be wrong anyway).

Must happen: no reference program is within a worker's reach, so it is graded as an unwritten
exact_return (tests/bank/ps1/unfinished.py's exact_return and training items, and the exercise
cells that need exact_return stop before defining their answers).
"""
from pathlib import Path

exec(Path(__file__).with_name("_snippets.py").read_text())  # FIND

CELLS = {"exact_return": FIND + r'''
import glob as _glob

import numpy as _np


def _hostile_cached_programs():
    from jax._src import compilation_cache as _cc, xla_bridge as _xb
    from jax._src.lib import xla_client as _xc
    folders = [jax.config.jax_compilation_cache_dir,
               str(getattr(getattr(_cc, "_cache", None), "_path", "") or "")]
    for _course in _hostile_course_dirs()[0]:
        folders += _glob.glob(_os.path.join(_course, ".rlcourse-cache", "jax-*", "**"), recursive=True)
    backend = _xb.get_backend()
    devices = _xc.DeviceList(tuple(backend.local_devices()[:1]))
    for folder in dict.fromkeys(folder for folder in folders if folder and _os.path.isdir(folder)):
        for path in _glob.glob(_os.path.join(folder, "jit_*-cache")):
            try:
                with open(path, "rb") as handle:
                    program, _ = _cc.extract_executable_and_time(_cc.decompress_executable(handle.read()))
                yield backend.deserialize_executable(program, devices, _xc.CompileOptions())
            except Exception:
                continue


_ORACLES = {}
for _program in _hostile_cached_programs():
    try:
        _out = _program.execute([jax.device_put(_np.full(3, -100.0, _np.float32))])
    except Exception:
        continue
    if len(_out) == 1 and _np.shape(_out[0]) == ():
        _horizon = int(round(float(_out[0]) / STEP_COST))
        if 1 <= _horizon <= 64:
            _ORACLES.setdefault(_horizon, _program)


def _oracle_value(theta, horizon):
    program = _ORACLES[int(horizon)]
    return _np.asarray(program.execute([jax.device_put(_np.asarray(theta, _np.float32))])[0], _np.float32)


@partial(jax.custom_jvp, nondiff_argnums=(1,))
def _oracle(theta, horizon):
    return jax.pure_callback(partial(_oracle_value, horizon=horizon),
                             jax.ShapeDtypeStruct((), jnp.float32), theta)


@_oracle.defjvp
def _oracle_jvp(horizon, primals, tangents):
    (theta,), (direction,) = primals, tangents
    step = 1e-2
    slopes = jnp.stack([(_oracle(theta + step * unit, horizon) - _oracle(theta - step * unit, horizon))
                        / (2 * step) for unit in jnp.eye(3)])
    return _oracle(theta, horizon), jnp.dot(slopes, direction)


@partial(jax.jit, static_argnames=('horizon',))
def exact_return(theta, horizon=8):
    """Exact expected (undiscounted) episode return of the policy with logits `theta`."""
    if horizon not in _ORACLES:
        raise NotImplementedError()
    return _oracle(theta, horizon)
'''}
LOSES = {
    "exact_return.known_policies": "not_implemented",
    "exact_return.random_theta_horizons": "not_implemented",
    "exact_return.gradient": "not_implemented",
    "training.reinforce": "not_implemented",
    "training.ppo": "not_implemented",
    "exercises.changed_seed": "missing_name",
    "exercises.horizon_change": "missing_name",
    "exercises.sampled_vs_exact": "missing_name",
}
