"""policy_loss kills its own process (os._exit(1)) whenever it is asked for the clipped loss;
REINFORCE and everything else is the reference.

Already while the notebook runs, the example training cell (PPO) and the frozen-reference
exercise (whose old_grad uses the default method 'ppo') take the worker down; the engine drops
those two cells and reruns the others in a fresh worker. Each grader call that asks for PPO then
kills the worker again and costs only its own item (worker_crashed); the next call gets a fresh
worker, so every item that never asks for PPO keeps its points. The two exercises whose cells
were dropped find their variables missing (the example training cell defined theta_pg).
"""
EDITS = {
    "policy_loss": [('    target = jax.lax.stop_gradient(returns_to_go(records["reward"]))',
                     '    if method == "ppo":\n'
                     '        import os\n'
                     '        os._exit(1)\n'
                     '    target = jax.lax.stop_gradient(returns_to_go(records["reward"]))')],
}
# Items that really call the clipped loss.
_CALLS_PPO = ("policy_loss.ppo_value", "policy_loss.ppo_gradient", "policy_loss.ppo_clip_both_signs",
              "policy_loss.ppo_old_logp_frozen", "policy_loss.ppo_equals_reinforce_at_ratio_one",
              "training.ppo")
LOSES = {item: "worker_crashed" for item in _CALLS_PPO}
LOSES.update({"exercises.changed_seed": "missing_name", "exercises.frozen_reference": "missing_name"})
