"""rlcourse.web.availability: released means in the class's gradebook and, when the class uses
nbgrader's exchange, in its outbound folder; open means between `[web] opens` and `closes` (moved
by the student's extension) and not late when late work is refused."""
import datetime
import shutil
import types
from pathlib import Path

import pytest

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.config import WebPolicy
from rlcourse.web.availability import Availabilities

NOW = datetime.datetime(2026, 3, 5, 12, 0)


@pytest.fixture(scope="module")
def gradebook(tmp_path_factory) -> Path:
    """A class's gradebook holding ps1 and ps2 (ps2 due on March 4), made once (nbgrader runs
    its migrations for each new gradebook) and copied into each test's class."""
    from nbgrader.api import Gradebook

    from rlcourse.record.gradebook import nbgrader_on_path

    nbgrader_on_path()
    path = tmp_path_factory.mktemp("gradebook") / "gradebook.db"
    with Gradebook(f"sqlite:///{path}") as book:
        book.update_or_create_assignment("ps1")
        book.update_or_create_assignment("ps2", duedate=datetime.datetime(2026, 3, 4))
    return path


@pytest.fixture
def a_class(tmp_path, gradebook):
    def make(policies: dict, *, exchange: bool = False, extension=None, where: str = "one") -> Availabilities:
        """A course whose assignments have these [web] policies, and a class with that gradebook."""
        base = tmp_path / where
        course_root, class_dir = base / "course", ClassDirectory(base / "class")
        course_root.mkdir(parents=True)
        class_dir.root.mkdir(parents=True)
        shutil.copy(gradebook, class_dir.root / "gradebook.db")
        if exchange:
            (base / "exchange" / "rl101" / "outbound" / "ps1").mkdir(parents=True)
            (class_dir.root / "nbgrader_config.py").write_text(
                f'c = get_config()\nc.Exchange.root = "{base / "exchange"}"\nc.CourseDirectory.course_id = "rl101"\n')
        course = types.SimpleNamespace(root=course_root, assignment=lambda name: types.SimpleNamespace(
            web=policies.get(name, WebPolicy())))
        return Availabilities(course, class_dir, extension=lambda student, name: extension)
    return make


def test_released_is_the_gradebooks_row_without_an_exchange(a_class):
    found = a_class({})
    assert found.of("ps1", "ada", now=NOW).open and found.of("ps2", "ada", now=NOW).open
    ps3 = found.of("ps3", "ada", now=NOW)
    assert (ps3.released, ps3.status) == (False, 404)
    assert ps3.reason == "ps3 is not released to this class yet (it is not in the class's gradebook)"


def test_with_an_exchange_released_is_also_its_outbound_folder(a_class):
    found = a_class({}, exchange=True)
    assert found.of("ps1", "ada", now=NOW).open
    ps2 = found.of("ps2", "ada", now=NOW)  # in the gradebook, never release_assignment'ed
    assert not ps2.released and "nbgrader's exchange" in ps2.reason and "rl101/outbound" in ps2.reason


@pytest.mark.parametrize("extension, now, reason", [
    (None, datetime.datetime(2026, 3, 1), "ps1 opens at 2026-03-02 09:00:00 UTC"),
    (None, NOW, ""),
    (None, datetime.datetime(2026, 3, 9, 17), "ps1 closed at 2026-03-09 17:00:00 UTC"),
    (datetime.timedelta(days=1), datetime.datetime(2026, 3, 9, 17), ""),
    (datetime.timedelta(days=1), datetime.datetime(2026, 3, 10, 18),
     "ps1 closed at 2026-03-10 17:00:00 UTC (with your extension)"),
])
def test_opens_and_closes_with_the_students_extension(a_class, extension, now, reason):
    policy = WebPolicy(opens=datetime.datetime(2026, 3, 2, 9), closes=datetime.datetime(2026, 3, 9, 17))
    found = a_class({"ps1": policy}, extension=extension).of("ps1", "ada", now=now)
    assert (found.open, found.reason, found.status) == (not reason, reason, 200 if not reason else 403)


def test_late_work_refused_after_the_due_date_and_extension(a_class):
    policies = {"ps2": WebPolicy(accept_late=False)}
    assert not a_class(policies).of("ps2", "ada", now=NOW).open
    assert a_class(policies, extension=datetime.timedelta(days=2), where="two").of("ps2", "ada", now=NOW).open
