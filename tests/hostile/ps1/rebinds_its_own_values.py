"""Rebinds what the given cells computed from the student's own values (issue 29, "also seen"):
the corridor's rewards STEP_COST and GOAL_REWARD, which the given environment computes from
PARAMS (not literals, so nothing protected them), and PARAMS' clip. Nothing was noted in the
report, and every later cell and call ran on the rebound values: exercise 4 then computed with
another epsilon, and exercise 5's batch (and training) with other rewards.

Must happen: the report notes the rebinding and the given cells run again right after this one
(the parameter cell as graded, pinned to the student), so every later cell and every grader's
call meets the student's own values: nothing is lost.
"""
CELLS = {"exercise_horizon": r'''short = exact_return(jnp.full(3, 100.0), horizon=2)
STEP_COST = -0.001
GOAL_REWARD = 10.0
PARAMS["clip"] = 0.1 if PARAMS["clip"] != 0.1 else 0.3
'''}
LOSES = {}
