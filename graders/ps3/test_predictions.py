"""The predictions written before Experiments 3 (GAE's lambda) and 4 (a sparse reward).

Each is read from the text of the cells above the experiment's run cell
(rlcourse.grading.predictions), so nothing the runs print can change it; grading never runs them
(assignment.toml skips them). The answers are the oracle's (solutions/ps3/exact.py
EXPERIMENT_ANSWERS), and `make claims` reruns both experiments on seeds 0-9 and fails if a run
leaves them."""
from rlcourse.grading.predictions import prediction_from_cell_text
from rlcourse.grading.rubric import Failure, item

CELL = "test_predict_experiments"

WRONG = {
    ("LAMBDA_PREDICTION", "lambda = 0 higher"): (
        "prediction_low_variance_wins",
        "lambda = 0 has the lowest variance, but each advantage is one TD error that trusts a critic "
        "which starts at random and stays wrong for a long time; on this budget that bias costs more "
        "than lambda = 1's variance"),
    ("LAMBDA_PREDICTION", "about the same"): (
        "prediction_lambda_irrelevant",
        "lambda decides what each advantage is made of: with lambda = 0 only the critic's one-step "
        "guess, with lambda = 1 the sampled rewards themselves; with a critic that starts at random "
        "the two learn at clearly different speeds"),
    ("SPARSE_PREDICTION", "learns, but more slowly"): (
        "prediction_sparse_signal_weaker",
        "an episode that earns no reward has every G_t = 0, so its standardised weights are 0 and its "
        "gradient is exactly zero, not small; a random policy almost never survives 200 steps"),
    ("SPARSE_PREDICTION", "learns as with the dense reward"): (
        "prediction_reward_density_irrelevant",
        "the dense reward pays for every step the pole stays up, so longer episodes are reinforced "
        "from the start; the sparse one pays only at the limit, which a random policy never reaches"),
}


def _grade(student, exact, name, run_cell):
    predicted = prediction_from_cell_text(student, run_cell, name)
    options = exact.EXPERIMENT_OPTIONS[name]
    answer = predicted.strip().lower() if isinstance(predicted, str) else predicted
    if answer not in options:
        raise Failure("bad_output", did=f"{name} is {predicted!r}",
                      should="set it to one of " + ", ".join(map(repr, options)))
    if answer != exact.EXPERIMENT_ANSWERS[name]:
        tag, why = WRONG[(name, answer)]
        raise Failure(tag, did=f"you predicted {answer!r}", should=why,
                      see="compare your prediction with the experiment's printed numbers, and ask "
                          "what each update's weights are made of.")


@item(1, cell=CELL, title="Experiment 3 (GAE's lambda), predicted before running it",
      kind="prediction")
def test_lambda(student, exact):
    _grade(student, exact, "LAMBDA_PREDICTION", "given_lambda_sweep")


@item(1, cell=CELL, title="Experiment 4 (a sparse reward), predicted before running it",
      kind="prediction")
def test_sparse(student, exact):
    _grade(student, exact, "SPARSE_PREDICTION", "given_sparse")
