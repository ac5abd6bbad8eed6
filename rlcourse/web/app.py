"""`rlcourse web`: the HTTP routes (FastAPI), for students' browsers, their `rlcourse submit`, and staff.

Who is who: an instructor-issued token (rlcourse.web.store), sent by the client as
`Authorization: Bearer TOKEN`, or exchanged on the login page for a session cookie (HttpOnly,
SameSite=Strict, random and kept only as a hash) whose forms carry the session's CSRF token.
The API takes bearer tokens only, so no other site can make a browser call it. As a JupyterHub
service (`--jupyterhub`, rlcourse.web.hub), the page signs people in through the hub's OAuth
instead, the API also takes the hub tokens of users allowed to use the service, and every route
and cookie lives under the service's prefix (`/services/NAME/`), so that no cookie of this
service is ever sent to the users' own servers behind the same proxy.

Who sees what: a student sees only their own submissions; any submission of someone else is
"not found" (404), exactly as one that does not exist, so ids reveal nothing. Staff tokens see
every submission and the class view. Pages carry the same Content-Security-Policy as the
feedback page (no script runs; forms post only here); the status page refreshes itself with a
meta tag while the submission waits.

Just over 300 lines: every route with its access check, read together (who may see what is the
point of this file).
"""
from __future__ import annotations

import contextlib
import hmac
import secrets

from fastapi import APIRouter, FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

from rlcourse.course.directory import CourseError
from rlcourse.explain.pages import CSP, render
from rlcourse.web.intake import MAX_UPLOAD_BYTES, Refused, too_large
from rlcourse.web.service import WebService, class_summary

SESSION_COOKIE = "rlcourse_session"
LOGIN_COOKIE = "rlcourse_login"
STATE_COOKIE = "rlcourse_oauth_state"
HEADERS = {"Content-Security-Policy": CSP + "; form-action 'self'; frame-ancestors 'none'",
           "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-store"}


def create_app(service: WebService, hub=None) -> FastAPI:
    """The service's routes; with `hub` (rlcourse.web.hub.HubLogin), under its prefix and signed
    in through the hub."""
    base = hub.prefix if hub is not None else ""
    router = APIRouter()

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
        """The token's identity (`.user`, `.staff`): an rlcourse token, or under a hub, a hub
        token allowed to use this service. Blocking (the store, the hub's API): run it off the loop."""
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        token = token.strip()
        found = service.store.identify(token) if scheme.lower() in ("bearer", "token") and token else None
        if found is None and hub is not None and token:
            found = hub.identify_blocking(token)
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
        return HTMLResponse(render(template, base=base, **context), status_code=status)

    def redirect(path: str, status: int = 303) -> RedirectResponse:
        return RedirectResponse(base + path, status_code=status)

    def set_cookie(response, name: str, value: str, **options) -> None:
        """Every cookie of the service is scoped to its own path (its prefix under a hub)."""
        response.set_cookie(name, value, path=base + "/", httponly=True, **options)

    # --- API (bearer token) --------------------------------------------------------------------
    @router.get("/api/whoami")
    def whoami(request: Request):
        token = bearer(request)
        return {"user": token.user, "staff": token.staff}

    @router.post("/api/submissions", status_code=202)
    async def submit(request: Request):
        token = await run_in_threadpool(bearer, request)
        form, data = await upload(request)
        assignment = assignment_of(str(form.get("assignment", "")))
        submission = await run_in_threadpool(service.intake.accept, assignment, token.user, data)
        service.queue.wake()
        return service.view_json(submission)

    @router.get("/api/submissions/{submission_id}")
    def submission_json(submission_id: int, request: Request):
        return service.view_json(visible(bearer(request), submission_id))

    @router.get("/api/submissions")
    def submissions_json(request: Request, assignment: str | None = None):
        token = bearer(request)
        rows = service.store.submissions(student=None if token.staff else token.user, assignment=assignment)
        return [service.view_json(row) for row in rows]

    @router.get("/submit.py")
    def submit_script():
        """The terminal client for students without rlcourse: rlcourse/web/client.py itself,
        byte for byte (standard library only), so there is one client. Public: it holds no secret."""
        from pathlib import Path

        from rlcourse.web import client

        return Response(Path(client.__file__).read_bytes(), media_type="text/x-python; charset=utf-8",
                        headers={"Content-Disposition": 'attachment; filename="submit.py"'})

    # --- pages (session cookie + CSRF) ---------------------------------------------------------
    @router.get("/login")
    def login_page(error: str = ""):
        if hub is not None and not error:  # the hub's own sign-in, then /oauth_callback
            url, state = hub.start(next_url=base + "/")
            response = RedirectResponse(url, status_code=302)
            # Lax: the browser comes back from the hub's page with a top-level GET.
            set_cookie(response, STATE_COOKIE, state, samesite="lax", max_age=600)
            return response
        nonce = secrets.token_urlsafe(16)
        response = page("web_login.html", title="Sign in", nonce=nonce, error=error)
        set_cookie(response, LOGIN_COOKIE, nonce, samesite="strict", max_age=600)
        return response

    @router.post("/login")
    async def login(request: Request):
        form = await request.form(max_files=0, max_fields=5)
        nonce = request.cookies.get(LOGIN_COOKIE, "")
        if not nonce or not hmac.compare_digest(nonce, str(form.get("csrf", ""))):
            return redirect("/login?error=the+form+expired")
        token = await run_in_threadpool(service.store.identify, str(form.get("token", "")).strip())
        if token is None:
            return redirect("/login?error=that+token+is+not+valid")
        cookie, _ = await run_in_threadpool(service.store.open_session, token)
        response = redirect("/")
        set_cookie(response, SESSION_COOKIE, cookie, samesite="strict", secure=request.url.scheme == "https")
        response.delete_cookie(LOGIN_COOKIE, path=base + "/")
        return response

    @router.get("/oauth_callback")
    async def oauth_callback(request: Request, code: str = "", state: str = ""):
        """The hub's answer to /login: the state must be the one this browser was given."""
        from rlcourse.course.class_directory import student_id_problem

        if hub is None:
            raise HTTPException(404, "not signed in through JupyterHub here")
        expected = request.cookies.get(STATE_COOKIE, "")
        if not (code and state and expected and hmac.compare_digest(expected, state)):
            raise HTTPException(403, "this sign-in was not started in this browser; sign in again")
        try:
            user, staff, next_url = await hub.finish(code, state)
        except PermissionError as error:
            raise HTTPException(403, str(error)) from None
        if not staff and student_id_problem(user):
            raise HTTPException(403, student_id_problem(user))
        cookie, _ = await run_in_threadpool(service.store.open_hub_session, user, staff)
        if not next_url.startswith(base + "/") or next_url.startswith("//"):
            next_url = base + "/"
        response = RedirectResponse(next_url, status_code=303)
        set_cookie(response, SESSION_COOKIE, cookie, samesite="strict", secure=request.url.scheme == "https")
        response.delete_cookie(STATE_COOKIE, path=base + "/")
        return response

    @router.post("/logout")
    async def logout(request: Request):
        form = await request.form(max_files=0, max_fields=5)
        session = browser(request)
        if session:
            check_csrf(session[1], form)
            service.store.close_session(request.cookies[SESSION_COOKIE])
        response = redirect("/login")
        response.delete_cookie(SESSION_COOKIE, path=base + "/")
        return response

    @router.get("/")
    def home(request: Request, error: str = ""):
        session = browser(request)
        if session is None:
            return redirect("/login")
        token, csrf = session
        return home_page(token, csrf, error, server=str(request.base_url).rstrip("/") + base)

    def home_page(token, csrf, error="", status=200, server=""):
        rows = service.store.submissions(student=None if token.staff else token.user)
        counting = service.counting(rows)
        assignments = [(name, [service.view_json(row, counting=counting) for row in reversed(rows)
                               if row.assignment == name])
                       for name in service.assignments()]
        return page("web_home.html", status=status, title="Your submissions", user=token.user,
                    staff=token.staff, csrf=csrf, assignments=assignments, error=error, server=server,
                    counting=counting)

    @router.post("/assignments/{name}/submit")
    async def submit_page(name: str, request: Request):
        session = browser(request)
        if session is None:
            return redirect("/login")
        token, csrf = session
        try:
            form, data = await upload(request)
            check_csrf(csrf, form)
            submission = await run_in_threadpool(service.intake.accept, assignment_of(name), token.user, data)
        except Refused as refused:
            return home_page(token, csrf, f"Not accepted: {refused}", status=refused.status,
                             server=str(request.base_url).rstrip("/") + base)
        service.queue.wake()
        return redirect(f"/submissions/{submission.id}")

    @router.get("/submissions/{submission_id}")
    def status_page(submission_id: int, request: Request):
        session = browser(request)
        if session is None:
            return redirect("/login")
        view = service.view_json(visible(session[0], submission_id))
        return page("web_status.html", title=f"Submission #{submission_id}", user=session[0].user,
                    csrf=session[1], view=view, waiting=view["status"] in ("queued", "running"))

    @router.get("/submissions/{submission_id}/feedback")
    def feedback(submission_id: int, request: Request):
        session = browser(request)
        if session is None:
            return redirect("/login")
        submission = visible(session[0], submission_id)
        if submission.report is None:
            return redirect(f"/submissions/{submission_id}")
        return HTMLResponse(service.feedback_page(submission))

    @router.get("/staff")
    def staff(request: Request):
        session = browser(request)
        if session is None:
            return redirect("/login")
        if not session[0].staff:
            raise HTTPException(403, "for the course staff only")
        summaries = [class_summary(service, name) for name in service.assignments()]
        rows = [dict(service.view_json(row), reason=row.error or "")
                for row in reversed(service.store.submissions())]
        return page("web_staff.html", title="Class view", user=session[0].user, csrf=session[1], staff=True,
                    summaries=summaries, rows=rows)

    app.include_router(router, prefix=base)
    return app


def run_web(service: WebService, *, host: str = "127.0.0.1", port: int = 8000, hub=None) -> int:
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
    where = f"http://{shown}:{sock.getsockname()[1]}{hub.prefix if hub else ''}/"
    print(f"rlcourse web: serving {service.class_dir.root} on {where} "
          + ("(signed in through JupyterHub) " if hub else "") +
          f"(store: {service.store.path})", flush=True)
    server = uvicorn.Server(uvicorn.Config(create_app(service, hub), log_level="warning"))
    server.run(sockets=[sock])
    return 0
