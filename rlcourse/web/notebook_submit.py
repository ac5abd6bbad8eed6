"""The released notebooks' last cell: submit the saved notebook from JupyterHub, feedback inline.

A student on the course's JupyterHub runs one given cell; it saves the notebook, sends the file
on disk to the course's `rlcourse web` service as the hub user whose server this is, waits with
progress, and shows what the course's feedback policy lets them see now (the score out of the
grade of record's maximum, each item, each named misconception; a sealed item as "answer
recorded") with a link to the full feedback page.

Runs in the student's kernel, which has the standard library and IPython, nothing of rlcourse:
`rlcourse hub config` writes this file as `rlcourse_submit.py`, and rlcourse/web/client.py (the
one client, the terminal's too) as `rlcourse_client.py`, into a folder on the single-user
servers' PYTHONPATH. Where rlcourse itself is installed, the package's client is used.

Who the student is: the server's `JUPYTERHUB_API_TOKEN`, which only the hub and this server know
(never typed, never in the browser); the hub gives it `access:services!service=rlcourse` (the
hub config's `server_token_scopes`). The service learns the user from the token alone; the cell
also checks that the token's user is `JUPYTERHUB_USER`, and refuses otherwise.

Grading never runs the cell: it is tagged `rlcourse-submit` (rlcourse.course.submission.
SUBMIT_CELL_TAG), and the cells a worker runs leave it out, as they leave out nbgrader's visible
tests (the service, `rlcourse autograde` and the Gradescope autograder all read submissions so).
Run anywhere else, it does nothing but say what to do instead: it submits only from a notebook
that a hub user's server runs (the hub's variables, the service's URL, and the notebook the
kernel was started for, `JPY_SESSION_NAME`, all set; nbgrader's and nbconvert's executors start
kernels without a session), and the kernel needs this file on its path (a worker runs `python
-I`).

Saving: the notebook in the browser may be ahead of the file. The cell asks the front end to
save (JupyterLab and Notebook 7's `docmanager:save` command, the classic notebook's
`save_checkpoint`), as otter-grader's force-save does, and sends the file only once its
modification time changed; when no front end saved it in `SAVE_SECONDS`, it refuses and says
to save (Ctrl-S) and run the cell again.
"""
from __future__ import annotations

import html
import os
import time
import urllib.error
import urllib.parse
from pathlib import Path

try:  # where rlcourse is installed
    from rlcourse.web import client
except ImportError:  # the copy `rlcourse hub config` writes beside this file for the kernels
    import rlcourse_client as client  # type: ignore[no-redef]

SERVICE_URL = "RLCOURSE_SERVICE_URL"
"""The service's API root as the single-user servers reach it (the hub config sets it)."""
HUB_ENVIRONMENT = ("JUPYTERHUB_API_TOKEN", "JUPYTERHUB_USER", SERVICE_URL)
SAVE_SECONDS = 10.0
SAVE_COMMAND = """
(function () {
  var app = window.jupyterapp || window.jupyterlab;
  if (app && app.commands && app.commands.hasCommand('docmanager:save')) {
    app.commands.execute('docmanager:save'); return;
  }
  var button = document.querySelector('[data-command="docmanager:save"]');
  if (button) { button.click(); return; }
  if (window.Jupyter && window.Jupyter.notebook) { window.Jupyter.notebook.save_checkpoint(); }
})();
"""
"""What the front end runs to save the notebook (JupyterLab 4 and Notebook 7, then classic)."""


class NotSubmitted(Exception):
    """The cell cannot submit here or now; the message says why and what to do."""


def elsewhere_advice(assignment: str, notebook: str) -> str:
    return (f"This cell submits from the course's JupyterHub only. Elsewhere, upload {notebook} on the "
            f"course's submission page, or run `rlcourse submit {assignment} {notebook} --server URL "
            "--token TOKEN` (or the page's submit.py) with the token the course staff gave you.")


def hub_session(environ=None) -> tuple[str, str, str, Path] | None:
    """(service URL, token, hub user, notebook path) when this kernel runs a notebook for a hub
    user's server; None anywhere else (grading, a laptop, a console)."""
    environ = os.environ if environ is None else environ
    if not all(environ.get(name) for name in HUB_ENVIRONMENT) or not environ.get("JPY_SESSION_NAME"):
        return None
    notebook = Path(environ["JPY_SESSION_NAME"])
    if not notebook.is_absolute():  # the server's path from its root; the kernel starts in its folder
        notebook = Path.cwd() / notebook.name
    return (environ[SERVICE_URL].rstrip("/"), environ["JUPYTERHUB_API_TOKEN"], environ["JUPYTERHUB_USER"],
            notebook)


def save_notebook(notebook: Path, *, request_save, seconds: float = SAVE_SECONDS) -> None:
    """Ask the front end to save `notebook` (`request_save()`) and wait until the file changes;
    NotSubmitted when it did not in `seconds` (no front end, or the save failed)."""
    def stamp():
        stat = notebook.stat()
        return stat.st_mtime_ns, stat.st_size

    try:
        before = stamp()
    except OSError:
        raise NotSubmitted(f"{notebook.name} is not on the server's disk: save it (File > Save) and run "
                           "this cell again") from None
    request_save()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        time.sleep(0.2)
        if stamp() != before:
            time.sleep(0.3)  # the front end writes the file in one request; let it finish
            return
    raise NotSubmitted(f"{notebook.name} could not be saved from here, so the file on disk may not be what "
                       "you see: save it (Ctrl-S, or File > Save Notebook) and run this cell again")


def feedback_html(view: dict, *, feedback_url: str) -> str:
    """The graded submission as inline HTML: no more than the service's view, which the course's
    feedback policy already cut to what the student may see now."""
    e = html.escape
    report = view.get("report") or {}
    link = f'<p><a href="{e(feedback_url)}" target="_blank">Full feedback page</a></p>'
    head = f"<h4>{e(view['assignment'])}: submission #{view['id']} {e(view['status'])}</h4>"
    if view["status"] != "graded":
        return head + f"<p>{e(view.get('error') or 'not graded yet')}</p>" + link
    if report.get("score") is None:
        return head + "<p>Your results are not shown yet: the course shows them later.</p>" + link
    score = f"Score: <b>{report['score']:g} / {report['max_score']:g}</b>"
    if report.get("late_penalty"):
        score += f" (late penalty {report['late_penalty']:g})"
    parts = [head, f"<p>{score}</p>"]
    if report.get("sealed_points"):
        parts.append(f"<p>{report['sealed_points']:g} more points for predictions and other committed answers: "
                     "recorded, graded after the due date.</p>")
    if report.get("pending"):
        parts.append(f"<p>{report['pending']:g} points of written answers await a TA.</p>")
    rows = []
    for item in report.get("items", []):
        title = e(item.get("title") or item["id"])
        if item.get("score") is None:
            rows.append(f"<tr><td>{title}</td><td>answer recorded</td><td>graded after the due date</td></tr>")
            continue
        outcome = "passed" if item["passed"] else "failed"
        detail = []
        if item.get("diagnosis"):
            detail.append(f"misconception: <code>{e(item['diagnosis'])}</code>")
        if not item["passed"] and item.get("message"):
            detail.append(e(item["message"]))
        if not item["passed"] and item.get("fix"):
            detail.append("To fix it: " + e(item["fix"]))
        rows.append(f"<tr><td>{title}</td><td>{outcome} {item['score']:g}/{item['max_score']:g}</td>"
                    f"<td>{'<br>'.join(detail)}</td></tr>")
    if rows:
        parts.append('<table class="rlcourse-feedback"><tr><th>Item</th><th>Outcome</th><th>Why</th></tr>'
                     + "".join(rows) + "</table>")
    parts.extend(f"<p>Error: {e(error)}</p>" for error in report.get("errors", []))
    parts.append(link)
    return '<div class="rlcourse-feedback">' + "".join(parts) + "</div>"


def feedback_page(service: str, view: dict) -> str:
    """The submission's full feedback page, as the student's browser reaches it: the service's
    path behind the hub's proxy (`/services/rlcourse/...`), on whatever host the page came from."""
    return urllib.parse.urlsplit(service).path + f"/submissions/{view['id']}/feedback"


def submit_saved_notebook(*, service: str, token: str, user: str, assignment: str, notebook: Path,
                          on_wait=None) -> dict:
    """Send the saved `notebook` as `user` and wait for its grade: the service's view of it.
    NotSubmitted when the token is not `user`'s or the service refuses."""
    try:
        whoami = client.whoami(service, token)
        if whoami.get("user") != user:
            raise NotSubmitted(f"this server's token belongs to {whoami.get('user')!r}, not to "
                               f"{user!r}: nothing was sent")
        return client.submit(service, token, assignment, notebook, on_wait=on_wait)
    except client.Refusal as refusal:
        raise NotSubmitted(f"the course's service refused it ({refusal.status}): {refusal}") from None
    except (urllib.error.URLError, OSError) as error:
        raise NotSubmitted(f"the course's service at {service} cannot be reached "
                           f"({getattr(error, 'reason', error)}); try again in a minute") from None


def submit_this_notebook(assignment: str, *, environ=None) -> dict | None:
    """The released cell's one call: save, submit, show the feedback inline. The service's view of
    the graded submission, or None when nothing was sent (the reason is shown)."""
    from IPython.display import HTML, Javascript, display

    session = hub_session(environ)
    if session is None:
        print(elsewhere_advice(assignment, f"{assignment}.ipynb"))
        return None
    service, token, user, notebook = session
    progress = display(HTML(f"<p>Saving {html.escape(notebook.name)}…</p>"), display_id=True)

    def waiting(view):
        where = f", position {view['position']} in the queue" if view.get("position") else ""
        progress.update(HTML(f"<p>Submission #{view['id']}: {html.escape(view['status'])}{where}…</p>"))

    save_requests = []

    def request_save():
        save_requests.append(display(Javascript(SAVE_COMMAND), display_id=True))

    try:
        try:
            save_notebook(notebook, request_save=request_save)
        finally:  # the command leaves the outputs: it would save again whenever the notebook opens
            for request in save_requests:
                request.update(HTML(""))
        progress.update(HTML(f"<p>Sending {html.escape(notebook.name)} as {html.escape(user)}…</p>"))
        view = submit_saved_notebook(service=service, token=token, user=user, assignment=assignment,
                                     notebook=notebook, on_wait=waiting)
    except NotSubmitted as reason:
        progress.update(HTML(f"<p><b>Not submitted:</b> {html.escape(str(reason))}</p>"))
        return None
    progress.update(HTML(feedback_html(view, feedback_url=feedback_page(service, view))))
    return view
