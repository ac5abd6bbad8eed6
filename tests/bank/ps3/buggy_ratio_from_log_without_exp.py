"""Takes the ratio as log pi - log pi_old, without the exp.

Every PPO item sees it: at ratio 1 the log-ratio is 0, so the gradient vanishes for A > 0 rows
and the A < 0 rows are masked as if far below the band.
"""
EDITS = {"ppo_logit_grad": [("    ratio = probs[rows, actions] / old_probs[rows, actions]",
                             "    ratio = np.log(probs[rows, actions]) - np.log(old_probs[rows, actions])")]}
LOSES = {
    "ppo_logit_grad.finite_differences": "ratio_from_log_without_exp",
    "ppo_logit_grad.clip_regions": "ratio_from_log_without_exp",
    "ppo_logit_grad.ratio_one_is_reinforce": "ratio_from_log_without_exp",
    "training.ppo": "training_not_improving",
}
