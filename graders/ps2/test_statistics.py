"""update_statistics: clip fraction and the approximate KL, from their definitions."""
import numpy as np

from rlcourse.grading.rubric import Evidence, BadOutput, item


@item(2, cell="test_ppo_objective", title="clip fraction and approximate KL")
def test_values(student, exact, rng):
    evidence = Evidence()
    for size, eps in ((50, 0.2), (23, 0.1)):
        logp_old = rng.normal(-1.0, 0.5, size)
        log_ratio = rng.normal(0.0, 0.3, size)
        # keep every ratio clear of the band's edges, where |r - 1| > eps is decided by rounding
        edge = np.log(np.array([1 - eps, 1 + eps]))
        log_ratio = np.where(np.min(np.abs(log_ratio[:, None] - edge[None, :]), axis=1) < 1e-3,
                             log_ratio + 0.01, log_ratio)
        logp_new = logp_old + log_ratio
        stats = student.call("update_statistics", logp_new, logp_old, eps=eps)
        if not isinstance(stats, dict) or not {"clip_fraction", "approx_kl"} <= set(stats):
            raise BadOutput("update_statistics returned " + type(stats).__name__
                            + (f" with keys {sorted(stats)}" if isinstance(stats, dict) else ""),
                            "it should return a dict with the keys 'clip_fraction' and 'approx_kl'")
        expected = exact.update_statistics(logp_new, logp_old, eps)
        for key in ("clip_fraction", "approx_kl"):
            try:
                value = float(np.asarray(stats[key]))
            except (TypeError, ValueError):
                raise BadOutput(f"update_statistics()['{key}'] is not a number", "it should be a float") from None
            evidence.compare(value, expected[key], what=f"update_statistics()['{key}'] on {size} samples, eps {eps}",
                             rtol=1e-7, atol=1e-12,
                             see="call update_statistics on three samples whose ratios are 0.5, 1 and 1.5 "
                                 "(logp_old 0, logp_new their logs) with eps 0.2: clip_fraction should be "
                                 "2/3 and approx_kl about 0.0959.",
                             fix="clip_fraction is mean(|r - 1| > eps) and approx_kl is mean((r - 1) - log r), "
                                 "with r = exp(logp_new - logp_old).")
    evidence.conclude()
