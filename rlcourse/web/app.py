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
every submission and the class view, and act (rlcourse.web.staff): retry a failed grading,
regrade one submission or an assignment's counting ones, download a notebook, export the class
(forms with the session's CSRF token on /staff, or the API with a staff token); a student gets
"not found" for each. Pages
carry the same Content-Security-Policy as the feedback page (no script runs; forms post only
here); the status page refreshes itself with a meta tag while the submission waits.

Errors: the API answers `{"error": "one sentence"}` with the status, FastAPI's own errors
(`{"detail": ...}`: an unknown route, a bad parameter) included, so `rlcourse submit` and a
downloaded `submit.py` read one shape. A browser gets the pages' template with the sentence and a
way back (home, or the sign-in page when not signed in).

Every route with its access check, read together (who may see what is the point of this file).
"""
from __future__ import annotations

import contextlib
import functools
import hmac
import secrets
import urllib.parse

from fastapi import APIRouter, FastAPI, HTTPException, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.formparsers import MultiPartException, MultiPartParser
from python_multipart.multipart import parse_options_header

from rlcourse.course.directory import CourseError
from rlcourse.explain.pages import CSP, render
from rlcourse.web.regrades import mount_regrades
from rlcourse.web.intake import DRAINED_BYTES, MAX_UPLOAD_BYTES, Refused, capped_body, too_large
from rlcourse.web.service import WebService, class_summary
from rlcourse.web.staff import Download, Impossible, StaffActions

SESSION_COOKIE = "rlcourse_session"
LOGIN_COOKIE = "rlcourse_login"
STATE_COOKIE = "rlcourse_oauth_state"
ERROR_TITLES = {401: "Sign in", 403: "Not allowed", 404: "Not found", 409: "Not now", 413: "Too large",
                422: "Not accepted", 429: "Not now", 500: "Something went wrong", 503: "Not available"}
HEADERS = {"Content-Security-Policy": CSP + "; form-action 'self'; frame-ancestors 'none'",
           "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-store"}


def create_app(service: WebService, hub=None) -> FastAPI:
    """The service's routes; with `hub` (rlcourse.web.hub.HubLogin), under its prefix and signed
    in through the hub."""
    base = hub.prefix if hub is not None else ""
    router = APIRouter()
    actions = StaffActions(service)

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

    # --- errors: JSON for the API, a page with a way back for a browser ----------------------
    async def error_response(request: Request, status: int, message: str, headers=None):
        if request.url.path.startswith(base + "/api/"):
            return JSONResponse({"error": message}, status_code=status, headers=headers)
        try:
            signed_in = await run_in_threadpool(browser, request) is not None
        except Exception:  # noqa: BLE001 - the store itself failing: the way back is the sign-in page
            signed_in = False
        return page("web_error.html", status=status, title=ERROR_TITLES.get(status, "Not possible"),
                    message=message, signed_in=signed_in, headers=headers)

    @app.exception_handler(Refused)
    async def _refused(request: Request, error: Refused):
        return await error_response(request, error.status, str(error))

    @app.exception_handler(Impossible)
    async def _impossible(request: Request, error: Impossible):
        return await error_response(request, error.status, str(error))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, error: StarletteHTTPException):
        message = error.detail if error.status_code != 404 or error.detail != "Not Found" else "no such page"
        return await error_response(request, error.status_code, str(message), getattr(error, "headers", None))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, error: RequestValidationError):
        where = [str(part) for part in (error.errors() or [{}])[0].get("loc", ())]
        if where[:1] == ["path"]:  # /submissions/abc: no such page, as for any other address
            return await error_response(request, 404, "no such page")
        return await error_response(request, 422, f"the request is not valid ({'.'.join(where)})")

    @app.exception_handler(Exception)
    async def _failed(request: Request, error: Exception):
        # Starlette logs the exception itself after this answer (the service's log).
        return await error_response(request, 500, "something went wrong on the service's side; "
                                                  "the course staff can see it in the service's log")

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

    def staff_only(token) -> None:
        """The staff's actions do not exist for anyone else: "not found", as for any other page."""
        if not token.staff:
            raise HTTPException(404, "no such page")

    async def staff_session(request: Request, *, form: bool = True):
        """(token, form) of a staff member's page request whose form carries the session's CSRF
        token; a redirect to the sign-in page when signed out; 404 for anyone else."""
        session = await run_in_threadpool(browser, request)
        if session is None:
            return None, None
        staff_only(session[0])
        fields = None
        if form:
            fields = await request.form(max_files=0, max_fields=5)
            check_csrf(session[1], fields)
        return session[0], fields

    async def upload(request: Request):
        """The form's fields and the uploaded file's bytes (at most the cap, plus one byte). The
        body is counted as it arrives, chunked or not (rlcourse.web.intake.capped_body): no more
        than MAX_BODY_BYTES of it reaches Starlette's form parser, which spools the file to disk;
        a body declared longer than DRAINED_BYTES is refused unread."""
        length = request.headers.get("content-length")
        if length and length.isdigit() and int(length) > DRAINED_BYTES:
            raise Refused(413, too_large())  # the client may see the connection closed
        kind, _ = parse_options_header(request.headers.get("content-type", ""))
        if kind != b"multipart/form-data":
            raise Refused(422, "no notebook in the upload (field 'notebook')")
        parser = MultiPartParser(request.headers, capped_body(request.stream()), max_files=1, max_fields=10)
        try:
            form = await parser.parse()
        except MultiPartException as error:
            raise Refused(400, f"the upload is not a form the service reads ({error.message})") from None
        file = form.get("notebook")
        if file is None or isinstance(file, str):
            await form.close()
            raise Refused(422, "no notebook in the upload (field 'notebook')")
        try:
            return form, await file.read(MAX_UPLOAD_BYTES + 1), file.filename or ""
        finally:
            await form.close()

    async def take_upload(request: Request, user: str, *, assignment: str | None = None,
                          csrf: str | None = None):
        """`user`'s upload accepted (the Submission), or refused; every refusal after the body
        was read counts against the student (rlcourse.web.intake.Refusals), and a student over
        that limit is refused before anything is read."""
        service.intake.refusals.check(user)
        try:
            form, data, filename = await upload(request)
            if csrf is not None:
                check_csrf(csrf, form)
            target = assignment_of(str(form.get("assignment", "")) if assignment is None else assignment)
            return await run_in_threadpool(
                functools.partial(service.intake.accept, target, user, data, filename=filename))
        except (Refused, HTTPException):
            service.intake.refusals.count(user)
            raise

    def page(template: str, status: int = 200, headers=None, **context) -> HTMLResponse:
        return HTMLResponse(render(template, base=base, **context), status_code=status, headers=headers)

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
        submission = await take_upload(request, token.user)
        service.queue.wake()
        return await run_in_threadpool(service.view_json, submission)

    @router.get("/api/submissions/{submission_id}")
    def submission_json(submission_id: int, request: Request):
        return service.view_json(visible(bearer(request), submission_id))

    @router.get("/api/submissions")
    def submissions_json(request: Request, assignment: str | None = None):
        token = bearer(request)
        rows = service.store.submissions(student=None if token.staff else token.user, assignment=assignment)
        return [service.view_json(row) for row in rows]

    # --- the staff's actions (API: a staff token; rlcourse.web.staff) ---------------------------
    @router.post("/api/submissions/{submission_id}/retry", status_code=202)
    def retry_json(submission_id: int, request: Request):
        staff_only(bearer(request))
        return service.view_json(actions.retry(submission_id))

    @router.post("/api/submissions/{submission_id}/regrade", status_code=202)
    def regrade_json(submission_id: int, request: Request):
        token = bearer(request)
        staff_only(token)
        return service.view_json(actions.regrade(submission_id, by=token.user))

    @router.post("/api/assignments/{name}/regrade", status_code=202)
    def regrade_assignment_json(name: str, request: Request):
        token = bearer(request)
        staff_only(token)
        return {"queued": actions.regrade_assignment(name, by=token.user)}

    @router.get("/api/submissions/{submission_id}/notebook")
    def notebook_json(submission_id: int, request: Request):
        staff_only(bearer(request))
        return download(actions.notebook(submission_id))

    @router.get("/api/assignments/{name}/export")
    def export_json(name: str, request: Request, format: str = "csv"):  # noqa: A002 - the CLI's word
        staff_only(bearer(request))
        return download(actions.export(name, format))

    def download(found: Download) -> Response:
        return Response(found.content, media_type=found.media_type,  # file names of safe ids only
                        headers={"Content-Disposition": f'attachment; filename="{found.filename}"'})

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

    def own_parameters(name: str, student: str) -> dict | None:
        """The values `student`'s notebook of `name` works with ([variants]), so they can check
        that their parameter cell printed them (it did not if Jupyter ran without their id);
        None when the assignment gives every student the same values."""
        variants = service.course.assignment(name).variants
        return variants.for_student(name, student) if variants.enabled and variants.parameters else None

    def home_page(token, csrf, error="", status=200, server=""):
        """Each assignment the student may submit, with its due date and their history (each
        submission's lateness; work that came through nbgrader's exchange too); one they may
        not submit says why, and one not released to the class is not listed at all."""
        rows = service.store.submissions(student=None if token.staff else token.user)
        if token.staff:
            service.read_all_dues()
        counting = service.counting(rows)
        assignments = []
        for name in service.assignments():
            mine = [row for row in rows if row.assignment == name]
            available = service.availability(name, None if token.staff else token.user)
            exchange = None if token.staff else service.exchange_work(token.user, name, mine)
            if not (available.released or mine or exchange):
                continue
            if exchange is not None:  # what the gradebook holds came through the exchange
                counting -= {row.id for row in mine}
            assignments.append({
                "name": name, "available": available, "rows": [service.view_json(row, counting=counting) for row in reversed(mine)],
                "exchange": service.view_json(exchange) if exchange else None,
                "due": None if token.staff else service.due(token.user, name).describe(),
                "parameters": None if token.staff else own_parameters(name, token.user),
                "getting_ready": available.open and service.queue.readiness.getting_ready(name)})
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
            submission = await take_upload(request, token.user, assignment=name, csrf=csrf)
        except Refused as refused:
            return await run_in_threadpool(functools.partial(
                home_page, token, csrf, f"Not accepted: {refused}", status=refused.status,
                server=str(request.base_url).rstrip("/") + base))
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
        return HTMLResponse(service.feedback_page(submission, regrades=regrades.panel(
            submission, viewer=session[0], csrf=session[1], base=base)))

    @router.get("/exchange/{student}/{name}/feedback")
    def exchange_feedback(student: str, name: str, request: Request):
        """The feedback page of work that came through nbgrader's exchange: its student's and
        the staff's only, at the level the policy allows now, as for an upload."""
        session = browser(request)
        if session is None:
            return redirect("/login")
        if not (session[0].staff or session[0].user == student):
            raise HTTPException(404, "no such submission")
        assignment_of(name)
        work = service.exchange_work(student, name)
        if work is None:
            raise HTTPException(404, "no such submission")
        return HTMLResponse(service.feedback_page(work, regrades=regrades.panel(
            work, viewer=session[0], csrf=session[1], base=base)))

    @router.get("/staff")
    def staff(request: Request, notice: str = ""):
        session = browser(request)
        if session is None:
            return redirect("/login")
        if not session[0].staff:
            raise HTTPException(403, "for the course staff only")
        service.read_all_dues()
        summaries = [dict(class_summary(service, name), available=service.availability(name, None))
                     for name in service.assignments()]
        rows = [dict(service.view_json(row), reason=row.error or "")
                for row in reversed(service.store.submissions())]
        return page("web_staff.html", title="Class view", user=session[0].user, csrf=session[1], staff=True,
                    summaries=summaries, rows=rows, notice=notice)

    @router.get("/staff/assignments/{name}/audit")
    def audit_page(request: Request, name: str):
        """The assignment's audit log (rlcourse.record.audit), newest first, for the staff: read
        as it stands (a formgrader edit is found and recorded by the next command that changes
        grades, or by `rlcourse audit`)."""
        from rlcourse.record.audit import AuditLog

        session = browser(request)
        if session is None:
            return redirect("/login")
        staff_only(session[0])
        assignment_of(name)
        with AuditLog(service.class_dir.root) as log:
            entries = list(reversed(log.entries(name)))
        return page("web_audit.html", title=f"{name}: every change to a grade", user=session[0].user,
                    csrf=session[1], staff=True, assignment=name, entries=entries)

    # --- the staff's actions (pages: the session and its CSRF token) ----------------------------
    async def staff_action(request: Request, action) -> Response:
        """Run a staff action (given the staff member's token) from /staff's form, then back to
        /staff saying what was done, or why it could not be (409)."""
        token, _ = await staff_session(request)
        if token is None:
            return redirect("/login")
        try:
            done = await run_in_threadpool(action, token)
        except Impossible as impossible:
            if impossible.status != 409:
                raise
            done = str(impossible)
        return redirect("/staff?" + urllib.parse.urlencode({"notice": done}))

    @router.post("/staff/submissions/{submission_id}/retry")
    async def retry_page(submission_id: int, request: Request):
        return await staff_action(request, lambda _: f"#{actions.retry(submission_id).id} queued again")

    @router.post("/staff/submissions/{submission_id}/regrade")
    async def regrade_page(submission_id: int, request: Request):
        return await staff_action(request, lambda token: f"#{actions.regrade(submission_id, by=token.user).id} "
                                  "queued to be regraded")

    @router.post("/staff/assignments/{name}/regrade")
    async def regrade_assignment_page(name: str, request: Request):
        return await staff_action(request, lambda token: f"{name}: {len(actions.regrade_assignment(name, by=token.user))} "
                                                   "counting submission(s) queued to be regraded")

    @router.post("/staff/assignments/{name}/export")
    async def export_page(name: str, request: Request):
        token, form = await staff_session(request)
        if token is None:
            return redirect("/login")
        return download(await run_in_threadpool(actions.export, name, str(form.get("format", "csv"))))

    @router.get("/staff/submissions/{submission_id}/notebook")
    async def notebook_page(submission_id: int, request: Request):
        token, _ = await staff_session(request, form=False)
        if token is None:
            return redirect("/login")
        return download(await run_in_threadpool(actions.notebook, submission_id))

    # --- regrade requests (rlcourse.web.regrades: the student's form and list, the staff's queue) --
    regrades = mount_regrades(app, router, service, bearer=bearer, browser=browser, check_csrf=check_csrf,
                              page=page, redirect=redirect, staff_only=staff_only)

    # --- LTI 1.3: a student's launch from the LMS (rlcourse.web.lti), when the class has lms.toml --
    from rlcourse.web.lti import lti_router

    def lti_session_cookie(response, cookie: str, request: Request) -> None:
        set_cookie(response, SESSION_COOKIE, cookie, samesite="strict", secure=request.url.scheme == "https")

    lti = lti_router(service, base=base, set_session_cookie=lti_session_cookie,
                     open_session=lambda student: service.store.open_hub_session(student, False)[0])
    if lti is not None:
        app.include_router(lti, prefix=base)

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
