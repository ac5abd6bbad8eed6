"""`rlcourse students tokens`: the per-student tokens the service knows people by.

Tokens are issued for the students of nbgrader's gradebook (its roster), or for the ids given;
an id given that the gradebook does not know yet is added to it first, through nbgrader's API,
so the roster stays the one list of students. Each token is printed once, as `student,token`
CSV, and kept only as a hash (rlcourse.web.store); issuing again replaces the old token, and
`--revoke` ends a token and every browser session opened with it.
"""
from __future__ import annotations

from rlcourse.course.class_directory import ClassDirectory, student_id_problem
from rlcourse.course.directory import CourseError
from rlcourse.web.store import Store


def issue_tokens(class_dir: ClassDirectory, *, students: list[str] | None = None,
                 staff: list[str] | None = None, revoke: list[str] | None = None) -> list[tuple[str, str]]:
    """(user, token) for each token issued; revokes first."""
    from rlcourse.record.gradebook import gradebook_students, nbgrader_on_path, open_gradebook

    nbgrader_on_path()
    for user in [*(students or []), *(staff or []), *(revoke or [])]:
        if student_id_problem(user):
            raise CourseError(student_id_problem(user))
    class_dir.root.mkdir(parents=True, exist_ok=True)
    store = Store(class_dir.root / "web.db")
    for user in revoke or []:
        if not store.revoke(user):
            raise CourseError(f"{user} has no live token to revoke")
    if students:
        known = gradebook_students(class_dir.db_url)
        missing = [student for student in students if student not in known]
        if missing:
            from nbgrader.api import Student

            with open_gradebook(class_dir.db_url) as gradebook:
                # nbgrader's own model, added in one commit (update_or_create_student commits
                # each student: a minute for a class of 2,000).
                gradebook.db.add_all([Student(id=student) for student in missing])
                gradebook.db.commit()
    elif not staff and not revoke:
        students = sorted(gradebook_students(class_dir.db_url))
        if not students:
            raise CourseError(f"the gradebook in {class_dir.root} has no students; name them with "
                              "--student ID (or add them with `nbgrader db student add`)")
    return store.issue_all(students or []) + store.issue_all(list(staff or []), staff=True)
