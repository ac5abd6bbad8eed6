"""Reads the HLO of the reference's programs from the JAX compilation cache (issue 29, finding
4): every worker could read the cache's folder (JAX's own configuration named it), its entries
deserialize inside the worker, and the HLO of the instructor's `exact_return` carried its
function names (the inner `one_more_step`), its loop, and the graders' call shapes. Reports are
redacted by line, and a name is not a line.

This entry's own exact_return calls its loop body `backup`, so `one_more_step` can only come
from the instructor's code. It looks wherever a worker could: the folder JAX is configured
with, the folder of the cache object JAX holds, and `.rlcourse-cache/jax-*/` under every course
FIND finds; it deserializes every entry it can open, collects the Python functions each
program's HLO records, and raises them (a notebook error, kept in its report) after setting its
answer.

Must happen: a student worker has no cache folder at all (its programs are served by key by
the grader, rlcourse.worker.compile_cache, and the cache holds programs of the given code only),
so no name of the reference's code reaches its report (FORBIDDEN_IN_REPORT) and nothing is lost.
"""
from pathlib import Path

exec(Path(__file__).with_name("_snippets.py").read_text())  # FIND

FORBIDDEN_IN_REPORT = ("one_more_step",)

CELLS = {
    "exact_return": '''@partial(jax.jit, static_argnames=('horizon',))
def exact_return(theta, horizon=8):
    """Exact expected return, by `horizon` backups from the last step."""
    p_right = jax.nn.sigmoid(theta)
    cells = jnp.arange(3)
    left_of = jnp.maximum(cells - 1, 0)
    right_of = cells + 1

    def backup(_, values):
        go_left = STEP_COST + values[left_of]
        go_right = jnp.where(right_of == GOAL, GOAL_REWARD, STEP_COST + values[right_of])
        return jnp.append((1.0 - p_right) * go_left + p_right * go_right, 0.0)

    values = jax.lax.fori_loop(0, horizon, backup, jnp.zeros(4))
    return 0.5 * (values[0] + values[1])''',
    "exercise_horizon": "short = exact_return(jnp.full(3, 100.0), horizon=2)\n" + FIND + r'''
import glob as _glob
import re as _re


def _hostile_cache_folders():
    folders = []
    try:
        folders.append(jax.config.jax_compilation_cache_dir)
    except Exception:
        pass
    try:
        from jax._src import compilation_cache as _cc
        folders.append(str(getattr(getattr(_cc, "_cache", None), "_path", "") or ""))
    except Exception:
        pass
    for _course in _hostile_course_dirs()[0]:
        folders += _glob.glob(_os.path.join(_course, ".rlcourse-cache", "jax-*", "**"), recursive=True)
    return [folder for folder in dict.fromkeys(folders) if folder and _os.path.isdir(folder)]


def _hostile_functions_in_cached_programs():
    from jax._src import compilation_cache as _cc, xla_bridge as _xb
    from jax._src.lib import xla_client as _xc
    backend = _xb.get_backend()
    devices = _xc.DeviceList(tuple(backend.local_devices()[:1]))
    names, opened = set(), 0
    for folder in _hostile_cache_folders():
        for path in _glob.glob(_os.path.join(folder, "*-cache")):
            try:
                with open(path, "rb") as handle:
                    program, _ = _cc.extract_executable_and_time(_cc.decompress_executable(handle.read()))
                text = backend.deserialize_executable(program, devices, _xc.CompileOptions()).hlo_modules()[0].to_string()
            except Exception:
                continue
            opened += 1
            names.update(name for name in _re.findall(r'^\d+ "([^"]+)"$', text, _re.M)
                         if "<locals>" in name and not name.startswith(("Session.", "serve.")))
    return opened, sorted(names)


_opened, _names = _hostile_functions_in_cached_programs()
raise RuntimeError(f"{_opened} cached programs read; functions inside them: {', '.join(_names)}")
'''}
LOSES = {}
