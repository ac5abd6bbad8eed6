"""`rlcourse submit ASSIGNMENT NOTEBOOK --server URL --token TOKEN [--json]`: the terminal's client.

Standard library only (urllib, argparse), and this file alone: `rlcourse web` serves it as
`/submit.py`, byte for byte, for students who have no rlcourse installed
(`python3 submit.py ps1 ps1.ipynb --server URL --token TOKEN`). So it imports nothing of
rlcourse, and one client is maintained, not two. It uploads the notebook, polls the submission
until it is graded, and prints what the course's feedback policy lets the student see now; with
`--json`, one JSON object in the shape of `rlcourse grade --json` (items limited by the policy).
With `--no-wait` it stops once the upload is accepted.

`submit.py regrade ASSIGNMENT ITEM --reason WHY` (`rlcourse regrade`) asks for an item or a
written answer of the student's grade of record to be regraded; `submit.py regrades`
(`rlcourse regrades`) lists their requests with each thread and outcome.

Exit status: 0 graded (or accepted, with --no-wait); 1 grading failed on the server; 2 refused
(bad token, rate limit, too late, not a notebook: one line saying which); 3 the server could not
be reached.
"""
from __future__ import annotations

import argparse
import json
import secrets
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

POLL_SECONDS = 1.0


class Refusal(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


def _request(url: str, token: str, *, data: bytes | None = None, content_type: str | None = None) -> dict:
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json"}
    if content_type:
        headers["Content-Type"] = content_type
    request = urllib.request.Request(url, data=data, headers=headers, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        try:
            body = json.loads(error.read())
            message = body.get("error") or body.get("detail") or str(body)
        except ValueError:
            message = error.reason
        raise Refusal(error.code, str(message)) from None


def multipart(fields: dict[str, str], file_field: str, filename: str, content: bytes) -> tuple[bytes, str]:
    """A multipart/form-data body, as a browser's form sends it."""
    boundary = "rlcourse-" + secrets.token_hex(16)
    parts = []
    for name, value in fields.items():
        parts.append(f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode())
    parts.append((f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; '
                  f'filename="{Path(filename).name}"\r\nContent-Type: application/x-ipynb+json\r\n\r\n').encode()
                 + content + b"\r\n")
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def submit(server: str, token: str, assignment: str, notebook: Path, *, timeout: float = 3600,
           on_wait=None, wait: bool = True) -> dict:
    """Upload and wait; the submission as the server shows it once graded or failed (as it was
    accepted, without `wait`)."""
    server = server.rstrip("/")
    body, content_type = multipart({"assignment": assignment}, "notebook", notebook.name, notebook.read_bytes())
    view = _request(f"{server}/api/submissions", token, data=body, content_type=content_type)
    if not wait:
        return view
    deadline = time.monotonic() + timeout
    last = None
    while view["status"] in ("queued", "running") and time.monotonic() < deadline:
        state = (view["status"], view.get("position"))
        if on_wait and state != last:
            on_wait(view)
            last = state
        time.sleep(POLL_SECONDS)
        view = _request(f"{server}/api/submissions/{view['id']}", token)
    return view


def whoami(server: str, token: str) -> dict:
    """Whom the service takes `token` for: {"user": ..., "staff": ...} (Refusal when no one)."""
    return _request(f"{server.rstrip('/')}/api/whoami", token)


def describe(view: dict) -> str:
    """The graded submission as plain text, no more than the policy lets the student see."""
    report = view.get("report") or {}
    lines = [f"{view['assignment']}: submission #{view['id']} {view['status']}"]
    if report.get("score") is None:
        lines.append("your results are not available yet (the course shows them later)")
        return "\n".join(lines)
    score = f"score {report['score']:g} / {report['max_score']:g}"
    if report.get("late_penalty"):
        score += f" (late penalty {report['late_penalty']:g})"
    lines.append(score)
    if report.get("pending"):
        lines.append(f"  {report['pending']:g} points of written answers await a TA")
    if report.get("sealed_points"):
        lines.append(f"  {report['sealed_points']:g} more points for predictions and other committed "
                     "answers: recorded, graded after the due date")
    for item in report.get("items", []):
        if item.get("score") is None:  # sealed until the due date
            lines.append(f"  [....] {item['id']}: answer recorded, graded after the due date")
            continue
        mark = "PASS" if item["passed"] else "FAIL"
        line = f"  [{mark}] {item['id']}: {item['score']:g}/{item['max_score']:g}"
        if item.get("diagnosis"):
            line += f"  ({item['diagnosis']})"
        lines.append(line)
        if not item["passed"] and item.get("message"):
            lines.append(f"         {item['message']}")
        if not item["passed"] and item.get("fix"):
            lines.append(f"         To fix it: {item['fix']}")
    for answer in report.get("written", []):
        state = {"awaiting": "awaiting a TA", "marked": f"marked {answer.get('score')}",
                 "re-marking": "changed since it was marked: awaiting a TA again"}.get(answer.get("state"), "")
        lines.append(f"  [TA  ] {answer['id']}: written answer, {state} ({answer['max_score']:g} points)")
    lines.extend(f"  error: {error}" for error in report.get("errors", []))
    return "\n".join(lines)


def main(options) -> int:
    notebook = Path(options.notebook)
    if not notebook.is_file():
        print(f"rlcourse submit: refused: {notebook} is not a file", file=sys.stderr)
        return 2

    def waiting(view):
        where = f" (position {view['position']})" if view.get("position") else ""
        print(f"submission #{view['id']}: {view['status']}{where}", file=sys.stderr, flush=True)

    wait = not getattr(options, "no_wait", False)
    try:
        view = submit(options.server, options.token, options.assignment, notebook, on_wait=waiting, wait=wait)
    except Refusal as refusal:
        print(f"rlcourse submit: refused ({refusal.status}): {refusal}", file=sys.stderr)
        return 2
    except (urllib.error.URLError, OSError) as error:
        print(f"rlcourse submit: cannot reach {options.server}: {getattr(error, 'reason', error)}",
              file=sys.stderr)
        return 3
    if not wait:
        print(json.dumps(view, indent=2) if options.json else
              f"{view['assignment']}: submission #{view['id']} accepted ({view['status']}); "
              f"see {options.server.rstrip('/')}/submissions/{view['id']}")
        return 0
    if view["status"] != "graded":
        print(f"rlcourse submit: submission #{view['id']} {view['status']}: "
              f"{view.get('error', 'not graded in time')}", file=sys.stderr)
        return 1
    if options.json:
        print(json.dumps(view["report"], indent=2))
    else:
        print(describe(view))
    return 0


def add_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The client's arguments: `rlcourse submit` and submit.py take the same ones."""
    parser.add_argument("assignment", help="the assignment's name, e.g. ps1")
    parser.add_argument("notebook", type=Path, help="your notebook, e.g. ps1.ipynb")
    parser.add_argument("--server", required=True, metavar="URL", help="e.g. http://127.0.0.1:8000")
    parser.add_argument("--token", required=True, help="your token from the course staff")
    parser.add_argument("--json", action="store_true",
                        help="print one JSON object in the shape of `rlcourse grade --json`")
    parser.add_argument("--no-wait", action="store_true",
                        help="stop once the upload is accepted; the page shows the feedback later")
    return parser


# --- regrade requests (rlcourse.web.regrades): `regrade ASSIGNMENT ITEM --reason ...`, `regrades` --
def open_regrade(server: str, token: str, assignment: str, item: str, reason: str) -> dict:
    """Ask for `item` (an item's id or its cell's) of your grade of record to be regraded."""
    body = json.dumps({"assignment": assignment, "item": item, "reason": reason}).encode()
    return _request(f"{server.rstrip('/')}/api/regrades", token, data=body, content_type="application/json")


def list_regrades(server: str, token: str, assignment: str | None = None) -> list:
    """Your regrade requests (every student's, for a staff token), open ones first."""
    query = f"?assignment={urllib.parse.quote(assignment)}" if assignment else ""
    return _request(f"{server.rstrip('/')}/api/regrades{query}", token)


def describe_regrade(request: dict) -> str:
    """One request, its thread and its outcome, as plain text."""
    lines = [f"#{request['id']} {request['assignment']} {request['cell']}"
             + (f" ({request['item']})" if request["item"] != request["cell"] else "") + f": {request['state']}"]
    if request["state"] == "accepted":
        lines.append(f"  the score is now {request['score']:g} / {request['max_score']:g}"
                     + (f" (it was {request['before']:g})" if request.get("before") is not None else ""))
    for message in request.get("messages", []):
        who = "staff" if message["role"] == "staff" else message.get("author", "you")
        lines.append(f"  {message['at']} {who}: {message['text']}")
    return "\n".join(lines)


def regrade_main(options) -> int:
    """`regrade ASSIGNMENT ITEM --reason ...`: the request as opened, or why it was refused."""
    return _regrade_call(options, lambda: open_regrade(options.server, options.token, options.assignment,
                                                       options.item, options.reason))


def regrades_main(options) -> int:
    """`regrades`: your requests, each with its thread and outcome."""
    return _regrade_call(options, lambda: list_regrades(options.server, options.token, options.assignment))


def _regrade_call(options, call) -> int:
    try:
        found = call()
    except Refusal as refusal:
        print(f"rlcourse regrade: refused ({refusal.status}): {refusal}", file=sys.stderr)
        return 2
    except (urllib.error.URLError, OSError) as error:
        print(f"rlcourse regrade: cannot reach {options.server}: {getattr(error, 'reason', error)}", file=sys.stderr)
        return 3
    if options.json:
        print(json.dumps(found, indent=2))
    elif isinstance(found, list):
        print("\n".join(describe_regrade(request) for request in found) or "no regrade requests")
    else:
        print(describe_regrade(found))
    return 0


def add_regrade_arguments(parser: argparse.ArgumentParser, *, listing: bool = False) -> argparse.ArgumentParser:
    """`regrade`'s arguments, or with `listing` those of `regrades` (`rlcourse` and submit.py alike)."""
    if listing:
        parser.add_argument("--assignment", help="only this assignment's requests")
    else:
        parser.add_argument("assignment", help="the assignment's name, e.g. ps1")
        parser.add_argument("item", help="the item's id (as your feedback lists it) or a written answer's id")
        parser.add_argument("--reason", required=True, help="what should be looked at again, and why")
    parser.add_argument("--server", required=True, metavar="URL", help="e.g. http://127.0.0.1:8000")
    parser.add_argument("--token", required=True, help="your token from the course staff")
    parser.add_argument("--json", action="store_true", help="print the request(s) as the API returns them")
    return parser


def script(argv: list[str]) -> int:
    """submit.py's command line: `regrade ...` and `regrades ...` first, else a submission."""
    if argv[:1] in (["regrade"], ["regrades"]):
        listing = argv[0] == "regrades"
        parser = add_regrade_arguments(argparse.ArgumentParser(
            prog=f"submit.py {argv[0]}", description="Your regrade requests." if listing else
            "Ask for an item of your grade to be regraded."), listing=listing)
        options = parser.parse_args(argv[1:])
        return regrades_main(options) if listing else regrade_main(options)
    return main(add_arguments(argparse.ArgumentParser(
        prog="submit.py", description="Submit a notebook to the course's rlcourse web service.")).parse_args(argv))


if __name__ == "__main__":  # submit.py, as `rlcourse web` serves this file
    sys.exit(script(sys.argv[1:]))
