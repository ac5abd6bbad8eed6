"""`rlcourse web` makes every open assignment ready for grading when it starts (issue 35): each
lane's grading process is sent `{"warm": name}` (rlcourse.web.job), so the first submission of the
day does not pay for the reference run, the graders' import and the fork template. A queued
submission always goes before warming; a warming that fails costs nothing but its time; the home
page says while an assignment is getting ready.

The first tests drive the grading threads' loop with stand-ins for the store and the grading
process (they grade nothing); the last starts the real service on a course copy and grades one
demo notebook in the process it warmed."""
import re
import time
import types

from webserver import DEMO, Server, copy_course, release, tokens_for, wait_for

from rlcourse.web.queue import GradingQueue


class QueuedOnce:
    """The store, holding the given submissions queued at start and nothing after."""

    def __init__(self, queued):
        self.queued = list(queued)

    def requeue_interrupted(self) -> int:
        return 0

    def next_queued(self):
        return self.queued.pop(0) if self.queued else None


def run_until_idle(queue: GradingQueue, answers=None):
    """Start the queue without its threads and run each lane's loop by hand until it would wait
    for new work; returns what each lane was asked, in order."""
    answers = answers or {}
    done = []
    for lane in queue.lanes:
        def ask(request, lane=lane):
            done.append((lane.number, "warm", request["warm"]))
            return answers.get(request["warm"], {"warmed": request["warm"], "seconds": 0.5})
        lane.ask = ask
    queue._grade = lambda submission, lane: done.append((lane.number, "grade", submission))
    queue._threads = []
    queue.start()
    getting_ready = {name: queue.readiness.getting_ready(name) for name in ("ps1", "ps2", "ps3")}
    queue._wake.wait = lambda timeout=None: queue._stop.set()  # idle: this lane's loop ends
    for lane in queue.lanes:
        queue._stop.clear()
        queue._run(lane)
    return done, getting_ready


def service_with(open_names, queued=()):
    return types.SimpleNamespace(store=QueuedOnce(queued), open_assignments=lambda: list(open_names))


def test_each_lane_warms_every_open_assignment_after_what_is_queued():
    logs = []
    queue = GradingQueue(service_with(["ps1", "ps2"], queued=["#7"]), log=logs.append, graders=2, warm=True)
    done, before = run_until_idle(queue)
    assert before == {"ps1": True, "ps2": True, "ps3": False}
    assert [entry for entry in done if entry[0] == 0] == [(0, "grade", "#7"), (0, "warm", "ps1"), (0, "warm", "ps2")]
    assert [entry for entry in done if entry[0] == 1] == [(1, "warm", "ps1"), (1, "warm", "ps2")]
    assert not queue.readiness.getting_ready("ps1") and not queue.readiness.getting_ready("ps2")
    assert "rlcourse web: making ps1, ps2 ready for grading" in logs
    assert "rlcourse web: ps2 ready for grading in lane 1 (0.5 s)" in logs


def test_a_warming_that_fails_is_logged_and_leaves_the_service_as_without_warming():
    logs = []
    queue = GradingQueue(service_with(["ps1"]), log=logs.append, graders=1, warm=True)
    done, _ = run_until_idle(queue, answers={"ps1": {"died": "the grading process ended (status 1)"}})
    assert done == [(0, "warm", "ps1")]
    assert not queue.readiness.getting_ready("ps1")
    assert any("ps1 could not be made ready in lane 0 (the grading process ended (status 1))" in line
               for line in logs)


def test_without_warm_nothing_is_asked_before_a_submission():
    queue = GradingQueue(service_with(["ps1"]), log=lambda message: None, graders=1, warm=False)
    done, before = run_until_idle(queue)
    assert done == [] and before["ps1"] is False


def test_the_service_grades_the_first_submission_in_the_process_it_warmed(tmp_path):
    course, class_dir = copy_course(tmp_path / "course"), tmp_path / "class"
    release(class_dir, "ps1")
    tokens = tokens_for(class_dir, ["ada"])
    server = Server(course, class_dir, warm=True)
    try:
        cookie = server.login(tokens["ada"])
        _, home, _ = server.api("/", cookie=cookie)
        # What the log says last, the page has said since (the readiness ends after the log
        # line): without the line after the page was drawn, the page must have had the notice.
        if "ps1 ready for grading" not in server.log.read_text():
            assert 'id="getting-ready-ps1"' in home, home
        deadline = time.monotonic() + 600
        while "ps1 ready for grading in lane 0" not in server.log.read_text():
            assert time.monotonic() < deadline, server.log.read_text()
            assert "could not be made ready" not in server.log.read_text(), server.log.read_text()
            time.sleep(0.5)
        _, home, _ = server.api("/", cookie=cookie)
        assert 'id="assignment-ps1"' in home and 'id="getting-ready-ps1"' not in home
        status, submitted, _ = server.upload(tokens["ada"], DEMO / "ada" / "ps1" / "ps1.ipynb")
        assert status == 202, submitted
        result = wait_for(server, tokens["ada"], submitted["id"])
        assert result["status"] == "graded", result
        log = server.log.read_text()
        started = re.findall(r"grading process (\d+) started", log)
        assert len(started) == 1, log  # the warmed process graded it: no other was started
        assert "making ps1 ready for grading" in log
    finally:
        server.stop()
