"""`make claims`' judgement, without its experiments: margins, floors, quotes and the two
numerical configurations (claims/run.py). The experiments themselves run in `make claims`."""
from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("claims_run", ROOT / "claims" / "run.py")
run = importlib.util.module_from_spec(spec)
sys.modules["claims_run"] = run
spec.loader.exec_module(run)


class TestBound:
    def test_every_seed_is_the_worst_seeds_margin(self):
        assert run.above("x", [12, 15, 20], 10).margin() == pytest.approx(0.2)

    def test_some_seed_is_the_best_seeds_margin(self):
        assert run.above("x", [8, 9, 15], 10, on="some").margin() == pytest.approx(0.5)

    def test_below_and_a_scale_of_its_own(self):
        assert run.below("x", [-3.0, -2.5], -2.0, scale=5.0).margin() == pytest.approx(0.1)

    def test_a_failed_inequality_has_a_negative_margin(self):
        assert run.below("x", [0.5, 0.8], 0.7).margin() < 0

    def test_a_bound_at_zero_needs_a_scale(self):
        with pytest.raises(ValueError):
            run.above("x", [1.0], 0.0)

    def test_only_every_or_some(self):
        with pytest.raises(ValueError):
            run.above("x", [1.0], 1.0, on="most")


def claim(quote, check, **kwargs):
    return run.Claim(quote, check, **kwargs)


FIGURES = {"native": {"x": [12.0, 14.0]}, "portable": {"x": [11.5, 14.0]}}


class TestJudge:
    def test_the_margin_is_the_least_over_both_configurations(self):
        verdict = run.judge(claim("x is above 10", lambda f: [run.above("x", f["x"], 10)]), FIGURES,
                            "On every seed x is above 10 here.")
        assert verdict.margin == pytest.approx(0.15) and verdict.holds
        assert [line.split(":")[0] for line in verdict.lines] == ["native", "portable"]

    def test_a_margin_under_the_floor_fails(self):
        verdict = run.judge(claim("x is above 10", lambda f: [run.above("x", f["x"], 10)], floor=0.2), FIGURES,
                            "x is above 10")
        assert not verdict.holds

    def test_a_sentence_the_notebook_no_longer_states_fails(self):
        verdict = run.judge(claim("x is above 10", lambda f: [run.above("x", f["x"], 10)]), FIGURES,
                            "x is above 11")
        assert not verdict.quoted and not verdict.holds

    def test_a_fact_that_fails_on_one_configuration_fails(self):
        verdict = run.judge(claim(None, lambda f: [run.Fact("x starts at 12", f["x"][0] == 12)], about="x"),
                            FIGURES, "")
        assert verdict.margin is None and not verdict.holds


@pytest.mark.parametrize("assignment", sorted(run.CLAIMS))
def test_every_claim_quotes_its_notebook(assignment):
    """Is every sentence a claim backs still in the source notebook, word for word?"""
    text = run.prose(assignment)
    missing = [c.quote for c in run.CLAIMS[assignment]() if c.quote and " ".join(c.quote.split()) not in text]
    assert missing == []


def test_claims_count_no_seeds():
    """A claim speaks of every seed or of some, never of how many: another floating-point path
    changes a count (issue 30's "on three of the five seeds")."""
    counting = ("three of", "two of", "four of", "most of", "of the five", "of the ten")
    quotes = [c.quote for name in run.CLAIMS for c in run.CLAIMS[name]() if c.quote]
    assert [quote for quote in quotes if any(word in quote for word in counting)] == []


class TestConfigurations:
    def test_the_portable_configuration_changes_every_library_the_notebooks_use(self):
        environment = run.BY_NAME["portable"].environment()
        assert {"MKL_CBWR", "ATEN_CPU_CAPABILITY", "OPENBLAS_CORETYPE", "NPY_DISABLE_CPU_FEATURES",
                "XLA_FLAGS"} <= set(environment)
        assert run.BY_NAME["native"].environment() == {}

    def test_numpy_accepts_what_the_portable_configuration_switches_off(self):
        """NumPy refuses to start if told to switch off a feature this CPU lacks or its baseline."""
        environment = {**os.environ, **run.BY_NAME["portable"].environment()}
        result = subprocess.run([sys.executable, "-W", "error", "-c", "import numpy"], env=environment,
                                capture_output=True, text=True)
        assert result.returncode == 0, result.stderr


def test_paths_differ_counts_the_runs_whose_fingerprints_differ():
    figures = {"native": {"fingerprint": [1.0, 2.0, 3.0]}, "portable": {"fingerprint": [1.0, 2.5, 3.0]}}
    assert "on 1 of 3 runs" in run.paths_differ("psX", figures)
