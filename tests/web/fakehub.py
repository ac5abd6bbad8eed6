"""A stand-in for JupyterHub's API, small enough to read: the three endpoints a service's HubOAuth
talks to, answering as JupyterHub 6 does, so that `rlcourse web --jupyterhub` runs JupyterHub's own
client code (jupyterhub.services.auth.HubOAuth) against it without a hub, a proxy or spawners.

- GET  /hub/api/oauth2/authorize  the hub's sign-in: for the user the test says is signed in,
       checks the client and redirect URI, keeps the PKCE challenge, redirects back with a code;
- POST /hub/api/oauth2/token      the code (once, with the client secret = the service's API
       token and the PKCE verifier) for an access token scoped to the service;
- GET  /hub/api/user              who a token belongs to: JupyterHub's identify model (kind,
       name, admin, groups, scopes); 403 for an unknown token.

Served by uvicorn in a thread of the test process on a free loopback port.
"""
import base64
import hashlib
import secrets
import socket
import threading
import time
import urllib.parse

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

SERVICE = "rlcourse"
CLIENT_ID = f"service-{SERVICE}"
PREFIX = f"/services/{SERVICE}/"
ACCESS = f"access:services!service={SERVICE}"


class FakeHub:
    def __init__(self, users: dict[str, dict]):
        self.users = users
        """name -> {"admin": bool, "groups": [...]}"""
        self.api_token = secrets.token_hex(32)
        self.signed_in: str | None = None
        """The user whose browser visits the authorize page (None: nobody is signed in)."""
        self.codes: dict[str, dict] = {}
        self.tokens: dict[str, tuple[str, list[str]]] = {}
        self.requests: list[str] = []

    def token_for(self, name: str, scopes=(ACCESS,)) -> str:
        """A hub token of `name` (as in $JUPYTERHUB_API_TOKEN of their server), with `scopes`."""
        token = secrets.token_hex(16)
        self.tokens[token] = (name, list(scopes))
        return token

    # --- the endpoints ----------------------------------------------------------------------------
    async def authorize(self, request: Request):
        self.requests.append("authorize")
        query = request.query_params
        if self.signed_in is None:
            return Response("sign in to the hub first", status_code=403)
        if query.get("client_id") != CLIENT_ID or query.get("redirect_uri") != PREFIX + "oauth_callback" \
                or query.get("response_type") != "code" or query.get("code_challenge_method") != "S256":
            return Response(f"bad authorization request: {dict(query)}", status_code=400)
        code = secrets.token_urlsafe(16)
        self.codes[code] = dict(user=self.signed_in, redirect_uri=query["redirect_uri"],
                                challenge=query["code_challenge"])
        target = query["redirect_uri"] + "?" + urllib.parse.urlencode({"code": code, "state": query["state"]})
        return RedirectResponse(target, status_code=302)

    async def token(self, request: Request):
        self.requests.append("token")
        form = dict(urllib.parse.parse_qsl((await request.body()).decode()))
        grant = self.codes.pop(form.get("code", ""), None)
        if form.get("client_id") != CLIENT_ID or form.get("client_secret") != self.api_token:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        if grant is None or form.get("redirect_uri") != grant["redirect_uri"]:
            return JSONResponse({"error": "invalid_grant"}, status_code=400)
        verifier = form.get("code_verifier", "")
        challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
        if challenge != grant["challenge"]:
            return JSONResponse({"error": "invalid_grant", "error_description": "PKCE"}, status_code=400)
        token = self.token_for(grant["user"])
        return JSONResponse({"access_token": token, "token_type": "Bearer", "expires_in": 3600,
                             "scope": ACCESS})

    async def user(self, request: Request):
        self.requests.append("user")
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() not in ("token", "bearer") or token not in self.tokens:
            return JSONResponse({"status": 403, "message": "Forbidden"}, status_code=403)
        name, scopes = self.tokens[token]
        model = self.users[name]
        return JSONResponse({"kind": "user", "name": name, "admin": bool(model.get("admin")),
                             "groups": list(model.get("groups", [])), "scopes": scopes,
                             "session_id": None, "token_id": None})

    # --- serving ------------------------------------------------------------------------------------
    def __enter__(self):
        app = Starlette(routes=[Route("/hub/api/oauth2/authorize", self.authorize),
                                Route("/hub/api/oauth2/token", self.token, methods=["POST"]),
                                Route("/hub/api/user", self.user)])
        self._socket = socket.socket()
        self._socket.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self._server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._socket]},
                                        daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            assert time.monotonic() < deadline, "the fake hub did not start"
            time.sleep(0.05)
        return self

    def __exit__(self, *exc):
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._socket.close()

    def service_environment(self) -> dict[str, str]:
        """What JupyterHub sets for a managed service named SERVICE."""
        return {"JUPYTERHUB_API_TOKEN": self.api_token, "JUPYTERHUB_CLIENT_ID": CLIENT_ID,
                "JUPYTERHUB_API_URL": self.url + "/hub/api", "JUPYTERHUB_BASE_URL": "/",
                "JUPYTERHUB_HOST": self.url, "JUPYTERHUB_SERVICE_NAME": SERVICE,
                "JUPYTERHUB_SERVICE_PREFIX": PREFIX,
                "JUPYTERHUB_OAUTH_CALLBACK_URL": PREFIX + "oauth_callback",
                "JUPYTERHUB_OAUTH_ACCESS_SCOPES": f'["{ACCESS}"]'}
