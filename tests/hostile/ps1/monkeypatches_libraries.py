"""The in-kernel cheat taken further: a do-nothing policy_loss, and at the top level every
comparison a grader might use is replaced in numpy, jax.numpy, numpy.testing and builtins
(`allclose`, `isclose`, `array_equal`, `all`, `assert_allclose`, and `builtins.all`/`any` for
anything array-like: the worker's own code still needs the real ones for lists, so a blunter
patch would only break this student's own notebook),
and rlcourse's own rubric helpers are replaced as well (`rlcourse.grading.rubric.expect_close`,
`Evidence.compare`, `as_array`), in case the graders ran in this process. (torch is not patched:
ps1 is a JAX assignment and importing torch would only cost time.)

Must happen: hidden graders compare in the grader's process, on plain data, so the patches change
nothing there: exactly the items of the plain do-nothing cheat are lost (the same as
tests/bank/ps1/cheat_patches_allclose.py).
"""
CELLS = {"policy_loss": '''def policy_loss(theta, records, method='ppo', clip=0.2):
    """Looks finished; computes nothing."""
    if method not in ("reinforce", "ppo"):
        raise ValueError(method)
    return -1e-9 * theta[2]


import builtins
import numpy as np
import numpy.testing
import rlcourse.grading.rubric as rubric

_yes = lambda *args, **kwargs: True
_nothing = lambda *args, **kwargs: None
for _module in (np, jnp):
    _module.allclose = _module.isclose = _module.array_equal = _yes
numpy.testing.assert_allclose = numpy.testing.assert_array_equal = _nothing
jnp.all = _yes
_real_all, _real_any = builtins.all, builtins.any
builtins.all = lambda values: True if hasattr(values, "shape") else _real_all(values)
builtins.any = lambda values: True if hasattr(values, "shape") else _real_any(values)
rubric.expect_close = _nothing
rubric.Evidence.compare = _nothing
rubric.as_array = lambda value, **kwargs: value
'''}
LOSES = {
    "policy_loss.reinforce_value": "wrong_value",
    "policy_loss.reinforce_gradient_exact": "wrong_value",
    "policy_loss.ppo_value": "wrong_value",
    "policy_loss.ppo_gradient": "wrong_value",
    "policy_loss.ppo_clip_both_signs": "wrong_value",
    "policy_loss.ppo_old_logp_frozen": "wrong_value",
    "policy_loss.ppo_equals_reinforce_at_ratio_one": "wrong_value",
    "training.reinforce": "training_not_improving",
    "training.ppo": "training_not_improving",
    "exercises.changed_seed": "training_not_improving",
    "exercises.sampled_vs_exact": "wrong_value",
}
