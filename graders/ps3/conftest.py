"""ps3's own fixture. The shared ones (`exact`, `misconceptions`, `models`, `explain`, `rng`)
come from the engine (rlcourse.grading.fixtures), `student` from its grading plugin.
Inputs are drawn from generators seeded by each item's name, so every student gets the same
inputs, and none of them is one the notebook shows."""
import pytest


@pytest.fixture(scope="session")
def guarded(student, models, misconceptions):
    """student.call, except that a call which raises is checked for the [n] * [n, A] broadcast
    bug on a square probe before the error is reported (see misconceptions.Guarded)."""
    return misconceptions.Guarded(student, models)
