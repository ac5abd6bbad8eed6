"""The staff's view of the audit log in `rlcourse web` (/staff/assignments/<name>/audit): every
entry of the class's audit.db, newest first, for staff only (a student gets "not found"). A
real server; the entries are appended through the log's own API, so nothing is graded."""
from webserver import Server, copy_course, release, tokens_for

from rlcourse.record.audit import AuditLog, Cause, Entry


def test_the_staff_see_every_change_newest_first_and_a_student_sees_nothing(tmp_path):
    course, class_dir = copy_course(tmp_path / "course"), tmp_path / "class"
    tokens = tokens_for(class_dir, ["ada"], staff=["prof"])
    release(class_dir, "ps1")
    with AuditLog(class_dir) as log:
        log.append([Entry("ada", "ps1", "test_policy_loss", None, 3.0, Cause("autograde", {"engine": "1.0"}),
                          "instructor", "2026-12-01T10:00:00+00:00"),
                    Entry("ada", "ps1", "test_policy_loss", 3.0, 4.0,
                          Cause("override", {"comment": "<b>right after all</b>"}), "ta", "2026-12-02T10:00:00+00:00")])
    server = Server(course, class_dir)
    try:
        status, page, _ = server.api("/staff/assignments/ps1/audit", cookie=server.login(tokens["prof"]))
        assert status == 200
        rows = page.split('id="audit"')[1].split("<tr data-student=")[1:]
        assert len(rows) == 2 and "2026-12-02" in rows[0] and "2026-12-01" in rows[1]
        assert "override" in rows[0] and ">3<" in rows[0] and ">4<" in rows[0] and ">ta<" in rows[0]
        assert "&lt;b&gt;right after all&lt;/b&gt;" in rows[0]  # a comment is text, never markup
        assert 'staff/assignments/ps1/audit"' in server.api("/staff", cookie=server.login(tokens["prof"]))[1]
        assert server.api("/staff/assignments/ps1/audit", cookie=server.login(tokens["ada"]))[0] == 404
        assert server.api("/staff/assignments/ps9/audit", cookie=server.login(tokens["prof"]))[0] == 404
    finally:
        server.stop()
