"""Regrade requests in `rlcourse web`: a student asks, from their feedback page or `rlcourse submit
regrade`, for one autograded cell or written answer of their grade of record to be looked at
again; the staff answer from a queue (/staff/regrades) or the API. The store and the window are
rlcourse.record.requests; an answer reaches the gradebook through rlcourse.batch.regrade_requests.

Who sees what, as everywhere in the service: a student sees and replies to their own requests
only (anyone else's is "not found", as one that does not exist); only staff answer, and only
staff see who answered and each cell's automatic score beside the one in question. A request
is only about the grade of record (the submission the gradebook holds), and only within the
cell's window: outside it the form is not shown and the API refuses with the reason and dates.

`mount_regrades` adds the routes to the service's router, with the access helpers of
rlcourse.web.app passed in, so that every route's check reads as the app's do.
"""
from __future__ import annotations

import urllib.parse

from fastapi import HTTPException, Request
from starlette.concurrency import run_in_threadpool

from rlcourse.course.directory import CourseError
from rlcourse.record.requests import OPEN, RegradeRequests, RequestRefused, find_target, last_set, targets
from rlcourse.web.store import now


class RegradeDesk:
    """The service's side of regrade requests for one class."""

    def __init__(self, service):
        self.service = service

    def _store(self) -> RegradeRequests:
        return RegradeRequests(self.service.class_dir.root)

    def record_of(self, student: str, name: str):
        """(submission, grade) of the student's grade of record of `name`: the submission the
        gradebook holds, uploaded or through the exchange; None when there is none yet."""
        service = self.service
        rows = service.store.submissions(student=student, assignment=name)
        submission = service.exchange_work(student, name, rows)
        if submission is None:
            counting = service.counting(rows)
            submission = next((row for row in rows if row.id in counting), None)
        if submission is None or submission.report is None:
            return None
        grade = service.grade(submission)
        return (submission, grade) if grade.recorded is not None else None

    def targets(self, student: str, name: str) -> list:
        """What `student` could ask about in `name`, each with its window (none without a grade of record)."""
        found = self.record_of(student, name)
        if found is None:
            return []
        submission, grade = found
        assignment = self.service.course.assignment(name)
        return targets(grade, assignment=assignment, deadline=self.service.deadline(student, name),
                       graded_at=submission.finished or submission.created,
                       set_at=last_set(self.service.class_dir.root, name, student))

    def open(self, student: str, name: str, item: str, reason: str):
        if name not in self.service.assignments():
            raise RequestRefused(404, f"no assignment {name!r}")
        found = self.targets(student, name)
        if not found:
            raise RequestRefused(409, f"you have no grade of record for {name} yet: a request is about a graded "
                                      "submission the gradebook holds")
        target = find_target(found, item)
        with self._store() as store:
            return store.open(student=student, assignment=name, target=target, item=item, reason=reason, now=now())

    def reply(self, request_id: int, student: str, text: str):
        with self._store() as store:
            return store.reply(request_id, student=student, text=text, now=now())

    def answer(self, request_id: int, *, accept: bool, by: str, text: str, score: float | None = None):
        from rlcourse.batch.regrade_requests import answer_request

        return answer_request(self.service.course, request_id, class_dir=self.service.class_dir, accept=accept,
                              by=by, text=text, score=score)

    def list(self, **filters) -> list:
        with self._store() as store:
            return store.list(**filters)

    def visible(self, token, request_id: int):
        """The request, if the token may see it (its student, or staff); else "not found"."""
        with self._store() as store:
            request = store.get(request_id)
        if request is None or not (token.staff or request.student == token.user):
            raise RequestRefused(404, "no such regrade request")
        return request

    def panel(self, submission, *, viewer, csrf: str, base: str) -> dict | None:
        """What the feedback page shows of regrade requests: for the submission the gradebook
        holds, the student's requests on it (thread and outcome) and, for the student
        themselves, a form for each cell whose window is open now; the others say when their
        window is. None for a submission that is not the grade of record."""
        student, name = submission.student, submission.assignment
        found = self.record_of(student, name)
        if found is None or found[0].id != submission.id or found[0].sha256 != submission.sha256:
            return None
        requests = self.list(student=student, assignment=name)
        asked = {request.cell for request in requests if request.state == OPEN}
        moment = now()
        own = viewer.user == student and not viewer.staff
        rows = [{"cell": target.cell, "kind": target.kind, "title": target.title, "score": target.score,
                 "max_score": target.max_score, "open": own and target.window.is_open(moment) and target.cell not in asked,
                 "asked": target.cell in asked, "window": target.window.describe(moment)}
                for target in self.targets(student, name)]
        return {"assignment": name, "csrf": csrf, "action": f"{base}/regrades", "list": f"{base}/regrades",
                "targets": rows, "requests": [request.to_json() for request in requests], "own": own}


def _score(value) -> float | None:
    try:
        return float(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        raise RequestRefused(422, f"the score {value!r} is not a number") from None


def mount_regrades(app, router, service, *, bearer, browser, check_csrf, page, redirect, staff_only) -> RegradeDesk:
    """Add the regrade requests' routes to `router` (the access helpers are rlcourse.web.app's)."""
    desk = RegradeDesk(service)

    @app.exception_handler(RequestRefused)
    async def _refused(request: Request, error: RequestRefused):
        from starlette.exceptions import HTTPException as StarletteHTTPException

        return await app.exception_handlers[StarletteHTTPException](request, HTTPException(error.status, str(error)))

    def student_only(token) -> None:
        if token.staff:
            raise RequestRefused(403, "a regrade request is a student's; the staff answer them (/staff/regrades)")

    # --- API (bearer token) --------------------------------------------------------------------
    @router.post("/api/regrades", status_code=201)
    async def open_json(request: Request):
        token = await run_in_threadpool(bearer, request)
        student_only(token)
        try:
            body = await request.json()
        except ValueError:
            raise RequestRefused(422, "send JSON: {\"assignment\", \"item\", \"reason\"}") from None
        if not isinstance(body, dict):
            raise RequestRefused(422, "send JSON: {\"assignment\", \"item\", \"reason\"}")
        opened = await run_in_threadpool(desk.open, token.user, str(body.get("assignment", "")),
                                         str(body.get("item", "")), str(body.get("reason", "")))
        return opened.to_json()

    @router.get("/api/regrades")
    def list_json(request: Request, assignment: str | None = None, item: str | None = None,
                  state: str | None = None):
        token = bearer(request)
        found = desk.list(student=None if token.staff else token.user, assignment=assignment, cell=item, state=state)
        return [request.to_json(staff=token.staff) for request in found]

    @router.get("/api/regrades/{request_id}")
    def one_json(request_id: int, request: Request):
        token = bearer(request)
        return desk.visible(token, request_id).to_json(staff=token.staff)

    @router.post("/api/regrades/{request_id}/{verdict}")
    async def answer_json(request_id: int, verdict: str, request: Request):
        """Staff: `accept` ({"score", "comment"}) or `decline` ({"reason"}); a student: `reply` ({"text"})."""
        token = await run_in_threadpool(bearer, request)
        try:
            body = await request.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise RequestRefused(422, "send JSON")
        if verdict == "reply" and not token.staff:
            desk.visible(token, request_id)
            done = await run_in_threadpool(desk.reply, request_id, token.user, str(body.get("text", "")))
            return done.to_json()
        staff_only(token)
        if verdict not in ("accept", "decline"):
            raise HTTPException(404, "no such page")
        accept = verdict == "accept"
        done = await run_in_threadpool(lambda: desk.answer(
            request_id, accept=accept, by=token.user, text=str(body.get("comment" if accept else "reason", "")),
            score=_score(body.get("score")) if accept else None))
        return done.to_json(staff=True)

    # --- pages (the session and its CSRF token) -------------------------------------------------
    @router.post("/regrades")
    async def open_page(request: Request):
        session = await run_in_threadpool(browser, request)
        if session is None:
            return redirect("/login")
        token, csrf = session
        student_only(token)
        form = await request.form(max_files=0, max_fields=5)
        check_csrf(csrf, form)
        opened = await run_in_threadpool(desk.open, token.user, str(form.get("assignment", "")),
                                         str(form.get("item", "")), str(form.get("reason", "")))
        return redirect("/regrades?" + urllib.parse.urlencode({"notice": f"Regrade request #{opened.id} on "
                                                                         f"{opened.cell} sent to the staff."}))

    @router.post("/regrades/{request_id}/reply")
    async def reply_page(request_id: int, request: Request):
        session = await run_in_threadpool(browser, request)
        if session is None:
            return redirect("/login")
        token, csrf = session
        form = await request.form(max_files=0, max_fields=5)
        check_csrf(csrf, form)
        await run_in_threadpool(desk.visible, token, request_id)
        await run_in_threadpool(desk.reply, request_id, token.user, str(form.get("text", "")))
        return redirect("/regrades")

    @router.get("/regrades")
    def list_page(request: Request, notice: str = ""):
        session = browser(request)
        if session is None:
            return redirect("/login")
        token, csrf = session
        if token.staff:
            return redirect("/staff/regrades")
        return page("web_regrades.html", title="Your regrade requests", user=token.user, csrf=csrf,
                    requests=[found.to_json() for found in desk.list(student=token.user)], notice=notice)

    @router.get("/staff/regrades")
    def queue_page(request: Request, assignment: str = "", item: str = "", notice: str = ""):
        """Every request, open first, filtered by assignment and item; each open one with the
        forms to accept (a new score, a comment) or decline (a reason)."""
        session = browser(request)
        if session is None:
            return redirect("/login")
        staff_only(session[0])
        found = desk.list(assignment=assignment or None, cell=item or None)
        return page("web_staff_regrades.html", title="Regrade requests", user=session[0].user, csrf=session[1],
                    staff=True, staff_view=True, requests=[found.to_json(staff=True) for found in found], notice=notice,
                    assignment=assignment, item=item, assignments=service.assignments())

    @router.post("/staff/regrades/{request_id}/{verdict}")
    async def answer_page(request_id: int, verdict: str, request: Request):
        session = await run_in_threadpool(browser, request)
        if session is None:
            return redirect("/login")
        token, csrf = session
        staff_only(token)
        if verdict not in ("accept", "decline"):
            raise HTTPException(404, "no such page")
        form = await request.form(max_files=0, max_fields=5)
        check_csrf(csrf, form)
        accept = verdict == "accept"
        try:
            done = await run_in_threadpool(lambda: desk.answer(
                request_id, accept=accept, by=token.user, text=str(form.get("comment" if accept else "reason", "")),
                score=_score(form.get("score")) if accept else None))
            notice = f"#{done.id} {done.state}" + (f": {done.cell} is now {done.score:g}" if accept else "")
        except (RequestRefused, CourseError) as refused:
            if getattr(refused, "status", 409) == 404:
                raise
            notice = f"#{request_id} not answered: {refused}"
        return redirect("/staff/regrades?" + urllib.parse.urlencode({"notice": notice}))

    return desk

