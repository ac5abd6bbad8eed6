"""rlcourse.web.store: a `web.db` written by an older rlcourse keeps its history when opened."""
import datetime
import sqlite3

from rlcourse.web.store import Store

OLD_SUBMISSIONS = """CREATE TABLE submissions (id INTEGER PRIMARY KEY, student VARCHAR(200), assignment VARCHAR(100),
    status VARCHAR(16), created DATETIME, folder VARCHAR(300), sha256 VARCHAR(64), attempts INTEGER,
    started DATETIME, finished DATETIME, report TEXT, timing TEXT, error TEXT)"""


def test_an_older_store_gets_the_new_columns_and_keeps_its_rows(tmp_path):
    path = tmp_path / "web.db"
    with sqlite3.connect(path) as db:
        db.execute(OLD_SUBMISSIONS)
        db.execute("INSERT INTO submissions (student, assignment, status, created, folder, sha256, attempts) "
                   "VALUES ('ada', 'ps1', 'graded', '2026-03-01 10:00:00.000000', 'web/history/x', 'ab', 1)")
    store = Store(path)
    (row,) = store.submissions()
    assert (row.student, row.status, row.regrade) == ("ada", "graded", False)
    assert row.created == datetime.datetime(2026, 3, 1, 10)
    again = store.queue_again(row.id, regrade=True, by="prof")
    assert again.regrade is True and again.requested_by == "prof"


def test_a_token_is_always_read_as_a_value_by_the_command_line(tmp_path):
    """URL-safe base64 starts with "-" one time in 64: such a token after `--token` was taken for
    an option ("expected one argument") and the student could not submit. Every token has a
    prefix; the client's parser reads 300 of them as the token."""
    import argparse

    from rlcourse.web.client import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    issued = Store(tmp_path / "web.db").issue_all([f"s{number}" for number in range(300)])
    for _, token in issued:
        options = parser.parse_args(["ps1", "ps1.ipynb", "--server", "http://127.0.0.1:1", "--token", token])
        assert options.token == token
