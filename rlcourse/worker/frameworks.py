"""How a worker turns wire arrays into the assignment's native arrays, and back.

Each assignment names its framework (`jax`, `torch` or `numpy`). Inbound arrays become that
framework's arrays before student code sees them; whatever student code returns is turned back
into plain numpy data. Gradients are taken inside the worker with the framework's own autodiff,
but they are only data to the grader, which decides what they are worth.
"""
from __future__ import annotations

import importlib

import numpy as np


class NumpyFramework:
    name = "numpy"
    spare_by_default = False
    """Whether a `ForkLauncher` keeps a spare worker of this framework ready by default
    (`WorkerOptions.spare`): only where measuring showed that the start-up a spare does before
    its submission arrives (`start_backend`) is worth an idle process per grading lane
    (docs/operators/performance/grade-throughput.md)."""

    def preload(self):
        """Import what every submission needs, before any student code runs: in the fork
        template, once per run rather than once per student. Every notebook of the course plots,
        and importing pyplot (with its font list) cost a quarter of a second per submission;
        IPython's cell transformer (which runs every cell's magics) another 0.03 s."""
        importlib.import_module("matplotlib.pyplot")
        try:
            importlib.import_module("IPython.core.inputtransformer2")
        except ImportError:
            pass  # the worker then strips magics itself (rlcourse.worker.server._transform_cell)

    def start_backend(self):
        """The start-up every submission's worker pays and that does not depend on the
        submission, done by a spare worker after it has confined itself and before its
        submission arrives (rlcourse.worker.launchers.ForkLauncher). Numpy has none."""

    def configure(self, *, compile_cache: dict | None = None):
        """Set process-wide options once the worker has started: `compile_cache` says how this
        worker uses a compilation cache (rlcourse.worker.compile_cache), if its framework has
        one: {"served": fd} (a student's: by key, from the grader), {"folder": path,
        "given_lines": {cell: [line, ...]}} (the trusted warm-up's, which writes it), or None."""

    def to_native(self, value):
        """Wire data (numpy arrays inside dicts and lists) as the framework's own arrays."""
        if isinstance(value, np.ndarray):
            return self.array_to_native(value)
        if isinstance(value, dict):
            return {key: self.to_native(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.to_native(item) for item in value]
        return value

    def array_to_native(self, array: np.ndarray):
        return array

    def to_plain(self, value):
        """Convert a framework value to numpy and plain Python; refuse opaque objects."""
        if isinstance(value, np.ndarray) or value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, np.generic):
            return value.item()
        if isinstance(value, dict):
            return {key: self.to_plain(item) for key, item in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.to_plain(item) for item in value]
        return self.array_to_plain(value)

    def array_to_plain(self, value):
        if hasattr(value, "__array__"):
            return np.asarray(value)
        raise TypeError(f"returned a {type(value).__name__}, which is not an array or number")

    def gradient(self, function, leaf):
        raise TypeError("this assignment's framework has no automatic differentiation")

    def evaluate(self, name, compute, args, kwargs):
        """Run `compute(args, kwargs)`, a call into student code; frameworks may compile it."""
        return compute(args, kwargs)


class JaxFramework(NumpyFramework):
    name = "jax"
    spare_by_default = True  # saves 0.03-0.11 s a submission; the vehicle for warming eager programs

    def preload(self):
        # Importing jax does not start its CPU backend; forking after this import is safe.
        super().preload()
        jax = importlib.import_module("jax")
        importlib.import_module("jax.numpy")
        # The grader's calls differentiate and compile with JAX's own functions as they were
        # before any student code ran: a cell that rebinds jax.grad or jax.jit changes its own
        # calls only (issue 29, finding 8).
        self._grad, self._jit = jax.grad, jax.jit
        # The MLIR dialect the first jit lowers to, else imported in every submission (0.01 s).
        importlib.import_module("jaxlib.mlir.dialects.mhlo")

    def start_backend(self):
        """Start JAX's CPU backend and its first dispatch (one small eager operation, whose
        program comes from the served compilation cache like any other): never in the template,
        since forking after the backend has started can deadlock, only in the forked child."""
        import jax
        import jax.numpy as jnp

        jax.devices()
        jnp.zeros((), jnp.float32).block_until_ready()

    def configure(self, *, compile_cache: dict | None = None):
        from rlcourse.worker import compile_cache as cache

        if compile_cache and "served" in compile_cache:
            cache.configure_served(int(compile_cache["served"]))
        elif compile_cache and "folder" in compile_cache:
            cache.configure_writer(str(compile_cache["folder"]), compile_cache.get("given_lines") or {})

    def array_to_native(self, array):
        import jax.numpy as jnp

        return jnp.asarray(array)

    def array_to_plain(self, value):
        import jax

        if isinstance(value, jax.Array):
            if jax.dtypes.issubdtype(value.dtype, jax.dtypes.prng_key):
                value = jax.random.key_data(value)
            return np.asarray(value)
        return super().array_to_plain(value)

    def gradient(self, function, leaf):
        return self._grad(function)(leaf)

    def __init__(self):
        self._compiled = {}
        self._eager_only = set()

    def evaluate(self, name, compute, args, kwargs):
        """`compute(args, kwargs)` under jax.jit, compiled once per call signature.

        Eager JAX compiles every primitive again for each new input shape, which made up most of
        a submission's grading time; one jit per signature (function, argument structure,
        non-array values, array shapes) compiles once and then runs repeated calls at native
        speed. Whatever jit cannot trace (float(x), numpy on a tracer, Python branches on
        values, non-array results) raises here, and the call runs eagerly instead: the eager
        result, or exception, is the one that counts.
        """
        import jax

        leaves, structure = jax.tree_util.tree_flatten((args, kwargs))
        dynamic = [i for i, leaf in enumerate(leaves) if isinstance(leaf, jax.Array)]
        static = tuple((i, leaf) for i, leaf in enumerate(leaves) if not isinstance(leaf, jax.Array))
        try:
            key = (name, structure, static)
            hash(key)
        except TypeError:
            return compute(args, kwargs)
        if key in self._eager_only:
            return compute(args, kwargs)

        def traced(arrays):
            filled = list(leaves)
            for index, array in zip(dynamic, arrays):
                filled[index] = array
            return compute(*jax.tree_util.tree_unflatten(structure, filled))

        try:
            if key not in self._compiled:
                self._compiled[key] = self._jit(traced)
            return self._compiled[key]([leaves[i] for i in dynamic])
        except Exception:  # noqa: BLE001 - anything jit cannot do is retried eagerly
            self._eager_only.add(key)
            return compute(args, kwargs)


class TorchFramework(NumpyFramework):
    name = "torch"

    def preload(self):
        super().preload()
        torch = importlib.import_module("torch")
        self._autograd = torch.autograd.grad  # as JaxFramework keeps jax.grad: before any cell
        # The first optimizer step imports torch._dynamo (about 1.8 s), in every submission
        # that trains; importing it here does it once per run. It starts no threads.
        importlib.import_module("torch._dynamo")

    def start_backend(self):
        """Start torch's intra-op thread pool and allocator with one small operation: in the
        forked child only (the template stays single-threaded, so that forking it is safe)."""
        import torch

        (torch.zeros(1) + 1).item()

    def array_to_native(self, array):
        import torch

        return torch.from_numpy(array.copy())

    def array_to_plain(self, value):
        import torch

        if isinstance(value, torch.Tensor):
            return value.detach().cpu().numpy()
        return super().array_to_plain(value)

    def gradient(self, function, leaf):
        import torch

        leaf = leaf.detach().clone().requires_grad_(True)
        output = function(leaf)
        if not (isinstance(output, torch.Tensor) and output.requires_grad):
            # The output does not depend on the leaf at all (e.g. it was detached): its gradient
            # is zero, which torch.autograd.grad would report as an error instead.
            return torch.zeros_like(leaf)
        (grad,) = self._autograd(output, leaf, allow_unused=True)
        return torch.zeros_like(leaf) if grad is None else grad


FRAMEWORKS = {cls.name: cls for cls in (NumpyFramework, JaxFramework, TorchFramework)}


def framework_named(name: str) -> NumpyFramework:
    try:
        return FRAMEWORKS[name]()
    except KeyError:
        raise ValueError(f"unknown framework {name!r}; expected one of {sorted(FRAMEWORKS)}") from None
