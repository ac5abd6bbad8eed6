"""The tool side of LTI 1.3 on `rlcourse web`: a student arrives from the LMS signed in as themself.

Three routes, mounted when the class directory holds an LMS registration (`lms.toml`):

- `GET /lti/jwks`: the tool's public key (rlcourse.batch.lms makes the pair once), which the LMS
  checks the tool's service requests against;
- `GET|POST /lti/login`: OIDC third-party login initiation: the LMS names itself and the user;
  the tool answers with a redirect to the LMS's authorisation endpoint carrying a fresh `state`
  (also set as a cookie: it binds the launch to this browser) and a fresh `nonce`;
- `POST /lti/launch`: the LMS posts back a signed `id_token`. pylti1p3 (pylti1p3next) validates
  it: the state against the cookie, the signature against the platform's JWKS, the issuer and
  client id (`aud`) against the registration, the deployment id against the registered ones,
  the nonce, the expiry, the message's claims. The nonce is used once: this module keeps the
  nonces the tool issued on the server, for ten minutes, and forgets each one as it is checked,
  so a replayed id_token is refused.

Who the user is comes from the roster only (`lms/roster.json`, written by `rlcourse lms roster`
from the LMS's own Names and Roles service): the id_token's `sub` is looked up there and mapped
to the nbgrader student id; a name, an e-mail or a role in the token is never trusted to say who
someone is. A user the roster does not know, or knows as staff, is refused (staff sign in with
their token). A student is then given the service's ordinary session cookie.

pylti1p3 ships Django and Flask adapters; the four small classes here are its FastAPI adapter
(a request's parameters and cookies, the cookies to set, the redirect, the launch).
"""
from __future__ import annotations

import threading
import time

from fastapi import APIRouter, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from rlcourse.explain.pages import render

LAUNCH_LIFETIME_SECONDS = 600
"""How long a login's nonce (and a launch's data) is kept: a launch must come back within it."""


class ServerStore:
    """pylti1p3's launch data storage, in this process's memory: the nonces issued and the
    launches' data, each for LAUNCH_LIFETIME_SECONDS. One service process serves the class, so
    a login and its launch meet here."""

    def __init__(self):
        self.values: dict[str, tuple[float, object]] = {}
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            expires, value = self.values.get(key, (0.0, None))
            return value if time.monotonic() < expires else None

    def set(self, key, value, exp=None):
        with self.lock:
            now = time.monotonic()
            for stale in [k for k, (expires, _) in self.values.items() if expires <= now]:
                del self.values[stale]
            self.values[key] = (now + min(exp or LAUNCH_LIFETIME_SECONDS, LAUNCH_LIFETIME_SECONDS), value)

    def take(self, key) -> bool:
        """Whether `key` was held (and unexpired); it is not held any more."""
        with self.lock:
            expires, _ = self.values.pop(key, (0.0, None))
            return time.monotonic() < expires


def _adapters(store: ServerStore):
    """pylti1p3's abstract Request, cookie service, session service and launch, for FastAPI."""
    from pylti1p3.cookie import CookieService
    from pylti1p3.launch_data_storage.cache import CacheDataStorage
    from pylti1p3.message_launch import MessageLaunch
    from pylti1p3.oidc_login import OIDCLogin
    from pylti1p3.redirect import Redirect
    from pylti1p3.request import Request as LtiRequest
    from pylti1p3.session import SessionService

    class FastApiRequest(LtiRequest):
        def __init__(self, params: dict, cookies: dict, secure: bool):
            super().__init__()
            self.params, self.cookies, self.secure = params, cookies, secure

        @property
        def session(self):  # the launch data live in ServerStore, not in a cookie session
            return {}

        def get_param(self, key):
            return self.params.get(key)

        def get_cookie(self, key):
            return self.cookies.get(key)

        def is_secure(self):
            return self.secure

    class Cookies(CookieService):
        """The state cookie: SameSite=None and Secure over https (the launch is a cross-site
        POST from the LMS), Lax on a plain-http loopback where no browser sends a Secure one."""

        def __init__(self, request: FastApiRequest, path: str):
            self.request, self.path, self.to_set = request, path, {}

        def _key(self, key):
            return self._cookie_prefix + "-" + key

        def get_cookie(self, name):
            return self.request.get_cookie(self._key(name))

        def set_cookie(self, name, value, exp=3600):
            self.to_set[self._key(name)] = (value, exp)

        def apply(self, response):
            secure = self.request.is_secure()
            for key, (value, exp) in self.to_set.items():
                response.set_cookie(key, value, max_age=exp, path=self.path, httponly=True, secure=secure,
                                    samesite="none" if secure else "lax")
            return response

    class Storage(CacheDataStorage):
        _cache = store

        def get_session_cookie_name(self):
            return None  # keyed by state and nonce, which are random and single-use

    class OnceSessions(SessionService):
        """A nonce passes once: checking it forgets it, so an id_token posted again is refused."""

        def check_nonce(self, nonce):
            return store.take(self.data_storage._prepare_key(self._get_key("nonce", nonce)))

    class Redirected(Redirect):
        def __init__(self, location, cookies):
            self.location, self.cookies = location, cookies

        def do_redirect(self):
            return self.cookies.apply(RedirectResponse(self.location, status_code=302))

        def do_js_redirect(self):
            return self.do_redirect()

        def set_redirect_url(self, location):
            self.location = location

        def get_redirect_url(self):
            return self.location

    def services(request):
        sessions = OnceSessions(request)
        storage = Storage()
        storage.set_request(request)
        sessions.set_data_storage(storage)
        return sessions, storage

    class Login(OIDCLogin):
        def __init__(self, request, tool_config, path):
            sessions, storage = services(request)
            super().__init__(request, tool_config, session_service=sessions,
                             cookie_service=Cookies(request, path), launch_data_storage=storage)

        def get_redirect(self, url):
            return Redirected(url, self._cookie_service)

        def get_response(self, html_text):
            return HTMLResponse(html_text)

        def get_cookies_allowed_js_check(self):  # no script runs on the service's pages
            raise HTTPException(400, "this browser sends no cookies to the service; open it in a new window")

    class Launch(MessageLaunch):
        def __init__(self, request, tool_config, path):
            sessions, storage = services(request)
            super().__init__(request, tool_config, session_service=sessions,
                             cookie_service=Cookies(request, path), launch_data_storage=storage)
            self.set_launch_data_lifetime(LAUNCH_LIFETIME_SECONDS)

        def _get_request_param(self, key):
            return self._request.get_param(key)

    return FastApiRequest, Login, Launch


def tool_config(registration):
    """The registration (rlcourse.course.config.LmsRegistration) as pylti1p3's ToolConfDict."""
    from pylti1p3.tool_config import ToolConfDict

    return ToolConfDict({registration.issuer: [{
        "default": True, "client_id": registration.client_id,
        "auth_login_url": registration.auth_login_url, "auth_token_url": registration.auth_token_url,
        "auth_audience": registration.auth_audience or None, "key_set_url": registration.key_set_url,
        "key_set": None, "deployment_ids": list(registration.deployment_ids)}]})


def lti_router(service, *, base: str, open_session, set_session_cookie) -> APIRouter | None:
    """The LTI routes of `service`'s class, or None when it has no `lms.toml`.
    `open_session(student)` gives a session cookie's value; `set_session_cookie(response, value,
    request)` sets it as the service sets every session cookie."""
    from rlcourse.batch import lms
    from rlcourse.course.config import LMS_FILE

    class_dir = service.class_dir
    if not (class_dir.root / LMS_FILE).is_file():
        return None
    registration = lms.registration_of(class_dir)
    config = tool_config(registration)
    store = ServerStore()
    FastApiRequest, Login, Launch = _adapters(store)
    router = APIRouter()

    async def lti_request(request: Request) -> "FastApiRequest":
        params = dict(request.query_params)
        if request.method == "POST":
            form = await request.form(max_files=0, max_fields=20)
            params.update({key: str(value) for key, value in form.items()})
        return FastApiRequest(params, dict(request.cookies), request.url.scheme == "https")

    def launch_url(request: Request) -> str:
        return str(request.base_url).rstrip("/") + base + "/lti/launch"

    @router.get("/lti/jwks")
    def jwks():
        """The tool's public key: the LMS checks the tool's token requests against it."""
        return JSONResponse(lms.tool_jwks(class_dir))

    async def login(request: Request):
        from pylti1p3.exception import LtiException, OIDCException

        lti = await lti_request(request)
        if lti.get_param("iss") != registration.issuer:
            raise HTTPException(403, "this LMS is not registered with the course")
        try:
            return Login(lti, config, base + "/").redirect(launch_url(request))
        except (OIDCException, LtiException) as error:
            raise HTTPException(403, f"the LMS's sign-in could not start: {error}") from None

    router.add_api_route("/lti/login", login, methods=["GET", "POST"])

    @router.post("/lti/launch")
    async def launch(request: Request):
        from pylti1p3.exception import LtiException, ToolConfException

        lti = await lti_request(request)
        try:
            data = await run_in_threadpool(lambda: Launch(lti, config, base + "/").get_launch_data())
        except (LtiException, ToolConfException) as error:  # an `aud` not registered: the latter
            raise HTTPException(403, f"the LMS's sign-in was refused: {error}") from None
        entry = lms.read_roster(class_dir).get(str(data.get("sub", "")))
        if entry is None:
            raise HTTPException(403, "your LMS account is not on the course's roster yet: ask the "
                                     "course staff to run `rlcourse lms roster`")
        if entry["staff"]:
            raise HTTPException(403, "the course staff sign in with their token, not through the LMS")
        cookie = await run_in_threadpool(open_session, entry["student"])
        # A page, not a redirect: the session cookie (SameSite=Strict) is sent on a navigation
        # this site starts, never on one that continues the LMS's cross-site POST.
        response = HTMLResponse(render("web_lti.html", base=base, title="Signed in", user=entry["student"]))
        set_session_cookie(response, cookie, request)
        return response

    return router
