"""`rlcourse web`: the HTTP routes (FastAPI), for students' browsers, their `rlcourse submit`, and staff.

Who is who: an instructor-issued token (rlcourse.web.store), sent by the client as
`Authorization: Bearer TOKEN`, or exchanged on the login page for a session cookie (HttpOnly,
SameSite=Strict, random and kept only as a hash) whose forms carry the session's CSRF token.
The API takes bearer tokens only, so no other site can make a browser call it.

Who sees what: a student sees only their own submissions; any submission of someone else is
"not found" (404), exactly as one that does not exist, so ids reveal nothing. Staff tokens see
every submission and the class view. Pages carry the same Content-Security-Policy as the
feedback page (no script runs; forms post only here); the status page refreshes itself with a
meta tag while the submission waits.
"""
from __future__ import annotations

import contextlib
import hmac
import secrets

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from rlcourse.course.directory import CourseError
from rlcourse.explain.pages import CSP, render
from rlcourse.web.intake import MAX_UPLOAD_BYTES, Refused, too_large
from rlcourse.web.service import WebService, class_summary

SESSION_COOKIE = "rlcourse_session"
LOGIN_COOKIE = "rlcourse_login"
HEADERS = {"Content-Security-Policy": CSP + "; form-action 'self'; frame-ancestors 'none'",
           "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-store"}


def create_app(service: WebService) -> FastAPI:
    @contextlib.asynccontextmanager
    async def lifespan(_app):
        service.queue.start()  # first requeues what a stopped service left running
        yield
        service.queue.stop()

    app = FastAPI(title="rlcourse", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)

    @app.middleware("http")
    async def _headers(request: Request, call_next):
        response = await call_next(request)
        for key, value in HEADERS.items():
            response.headers.setdefault(key, value)
        return response

    @app.exception_handler(Refused)
    async def _refused(request: Request, error: Refused):
        return JSONResponse({"error": str(error)}, status_code=error.status)

    # --- who is asking -------------------------------------------------------------------------
    def bearer(request: Request):
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        found = service.store.identify(token.strip()) if scheme.lower() == "bearer" and token else None
        if found is None:
            raise HTTPException(401, "no valid token: ask the course staff for yours",
                                headers={"WWW-Authenticate": "Bearer"})
        return found

    def browser(request: Request):
        """(token, csrf) of the page's session, or None."""
        cookie = request.cookies.get(SESSION_COOKIE)
        return service.store.from_session(cookie) if cookie else None

    def check_csrf(expected: str, form) -> None:
        if not hmac.compare_digest(expected, str(form.get("csrf", ""))):
            raise HTTPException(403, "the form expired; reload the page and try again")

    def visible(token, submission_id: int):
        submission = service.store.get(submission_id)
        if submission is None or not (token.staff or submission.student == token.user):
            raise HTTPException(404, "no such submission")
        return submission

    def assignment_of(name: str):
        if name not in service.assignments():
            raise HTTPException(404, f"no assignment {name!r}")
        try:
            return service.course.assignment(name)
        except CourseError as error:
            raise HTTPException(500, str(error)) from None

    async def upload(request: Request):
        """The form's fields and the uploaded file's bytes (at most the cap, plus one byte)."""
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > 4 * MAX_UPLOAD_BYTES:
            # Far over the cap: refused unread (the client may see the connection closed). A
            # file just over it is read (spooled to disk), so its sender gets the message.
            raise Refused(413, too_large())
        form = await request.form(max_files=1, max_fields=10)
        file = form.get("notebook")
        if file is None or isinstance(file, str):
            raise Refused(422, "no notebook in the upload (field 'notebook')")
        return form, await file.read(MAX_UPLOAD_BYTES + 1)

    def page(template: str, status: int = 200, **context) -> HTMLResponse:
        return HTMLResponse(render(template, **context), status_code=status)

    # --- API (bearer token) --------------------------------------------------------------------
    @app.get("/api/whoami")
    def whoami(request: Request):
        token = bearer(request)
        return {"user": token.user, "staff": token.staff}

    @app.post("/api/submissions", status_code=202)
    async def submit(request: Request):
        token = bearer(request)
        form, data = await upload(request)
        assignment = assignment_of(str(form.get("assignment", "")))
        submission = await run_in_threadpool(service.intake.accept, assignment, token.user, data)
        service.queue.wake()
        return service.view_json(submission)

    @app.get("/api/submissions/{submission_id}")
    def submission_json(submission_id: int, request: Request):
        return service.view_json(visible(bearer(request), submission_id))

    @app.get("/api/submissions")
    def submissions_json(request: Request, assignment: str | None = None):
        token = bearer(request)
        rows = service.store.submissions(student=None if token.staff else token.user, assignment=assignment)
        return [service.view_json(row) for row in rows]

    @app.get("/submit.py")
    def submit_script():
        """The terminal client for students without rlcourse: rlcourse/web/client.py itself,
        byte for byte (standard library only), so there is one client. Public: it holds no secret."""
        from pathlib import Path

        from rlcourse.web import client

        return Response(Path(client.__file__).read_bytes(), media_type="text/x-python; charset=utf-8",
                        headers={"Content-Disposition": 'attachment; filename="submit.py"'})

    # --- pages (session cookie + CSRF) ---------------------------------------------------------
    @app.get("/login")
    def login_page(error: str = ""):
        nonce = secrets.token_urlsafe(16)
        response = page("web_login.html", title="Sign in", nonce=nonce, error=error)
        response.set_cookie(LOGIN_COOKIE, nonce, httponly=True, samesite="strict", max_age=600)
        return response

    @app.post("/login")
    async def login(request: Request):
        form = await request.form(max_files=0, max_fields=5)
        nonce = request.cookies.get(LOGIN_COOKIE, "")
        if not nonce or not hmac.compare_digest(nonce, str(form.get("csrf", ""))):
            return RedirectResponse("/login?error=the+form+expired", status_code=303)
        token = await run_in_threadpool(service.store.identify, str(form.get("token", "")).strip())
        if token is None:
            return RedirectResponse("/login?error=that+token+is+not+valid", status_code=303)
        cookie, _ = await run_in_threadpool(service.store.open_session, token)
        response = RedirectResponse("/", status_code=303)
        response.set_cookie(SESSION_COOKIE, cookie, httponly=True, samesite="strict",
                            secure=request.url.scheme == "https")
        response.delete_cookie(LOGIN_COOKIE)
        return response

    @app.post("/logout")
    async def logout(request: Request):
        form = await request.form(max_files=0, max_fields=5)
        session = browser(request)
        if session:
            check_csrf(session[1], form)
            service.store.close_session(request.cookies[SESSION_COOKIE])
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(SESSION_COOKIE)
        return response

    @app.get("/")
    def home(request: Request, error: str = ""):
        session = browser(request)
        if session is None:
            return RedirectResponse("/login", status_code=303)
        token, csrf = session
        return home_page(token, csrf, error, server=str(request.base_url).rstrip("/"))

    def home_page(token, csrf, error="", status=200, server=""):
        rows = service.store.submissions(student=None if token.staff else token.user)
        assignments = [(name, [service.view_json(row) for row in reversed(rows) if row.assignment == name])
                       for name in service.assignments()]
        return page("web_home.html", status=status, title="Your submissions", user=token.user,
                    staff=token.staff, csrf=csrf, assignments=assignments, error=error, server=server)

    @app.post("/assignments/{name}/submit")
    async def submit_page(name: str, request: Request):
        session = browser(request)
        if session is None:
            return RedirectResponse("/login", status_code=303)
        token, csrf = session
        try:
            form, data = await upload(request)
            check_csrf(csrf, form)
            submission = await run_in_threadpool(service.intake.accept, assignment_of(name), token.user, data)
        except Refused as refused:
            return home_page(token, csrf, f"Not accepted: {refused}", status=refused.status,
                             server=str(request.base_url).rstrip("/"))
        service.queue.wake()
        return RedirectResponse(f"/submissions/{submission.id}", status_code=303)

    @app.get("/submissions/{submission_id}")
    def status_page(submission_id: int, request: Request):
        session = browser(request)
        if session is None:
            return RedirectResponse("/login", status_code=303)
        view = service.view_json(visible(session[0], submission_id))
        return page("web_status.html", title=f"Submission #{submission_id}", user=session[0].user,
                    csrf=session[1], view=view, waiting=view["status"] in ("queued", "running"))

    @app.get("/submissions/{submission_id}/feedback")
    def feedback(submission_id: int, request: Request):
        session = browser(request)
        if session is None:
            return RedirectResponse("/login", status_code=303)
        submission = visible(session[0], submission_id)
        if submission.report is None:
            return RedirectResponse(f"/submissions/{submission_id}", status_code=303)
        return HTMLResponse(service.feedback_page(submission))

    @app.get("/staff")
    def staff(request: Request):
        session = browser(request)
        if session is None:
            return RedirectResponse("/login", status_code=303)
        if not session[0].staff:
            raise HTTPException(403, "for the course staff only")
        summaries = [class_summary(service, name) for name in service.assignments()]
        rows = [dict(service.view_json(row), reason=row.error or "")
                for row in reversed(service.store.submissions())]
        return page("web_staff.html", title="Class view", user=session[0].user, csrf=session[1], staff=True,
                    summaries=summaries, rows=rows)

    return app


def run_web(service: WebService, *, host: str = "127.0.0.1", port: int = 8000) -> int:
    """Serve until interrupted. The socket is bound here, so `--port 0` takes a free port the
    system picks and the first line printed names it (tests read it)."""
    import socket

    import uvicorn

    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as error:
        raise CourseError(f"cannot listen on {host}:{port}: {error.strerror}") from None
    sock.listen(2048)  # connections wait in the backlog until uvicorn has started
    shown = f"[{host}]" if family == socket.AF_INET6 else host
    print(f"rlcourse web: serving {service.class_dir.root} on http://{shown}:{sock.getsockname()[1]}/ "
          f"(store: {service.store.path})", flush=True)
    server = uvicorn.Server(uvicorn.Config(create_app(service), log_level="warning"))
    server.run(sockets=[sock])
    return 0
