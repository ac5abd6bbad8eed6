"""An LTI 1.3 platform on the loopback, playing Canvas for the LMS tests.

The security of it is lti1p3platform's (a platform implementation of LTI 1.3 Advantage): its
token endpoint checks the tool's client-credentials request (the JWT assertion's signature
against the tool's JWKS, fetched from the tool or given) and signs the access token; every
service call's bearer token is checked by its `validate_token` (signature, issuer, expiry,
scopes). lti1p3platform has no storage, so the line items, scores, results and memberships are
kept here, by the AGS 2.0 and NRPS 2.0 rules a platform follows: a score is kept per user only if
its timestamp is newer than the one held; results are the latest score of each user. The OIDC
authorisation endpoint signs id_tokens with the platform's key as Canvas does, and lets a test
spoil one (`Platform.spoil`) to see the tool refuse it.

Failures on demand (`Platform.fail_next`): the next N service calls answer a status (429 with
Retry-After: 0, or 503) before the real answer, as a loaded Canvas does.
"""
from __future__ import annotations

import html
import json
import socket
import threading
import time

import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from jwcrypto.jwk import JWK
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.registration import Registration

ISSUER = "https://canvas.test.instructure.com"
CLIENT_ID = "10000000000042"
DEPLOYMENT_ID = "7:course-rl-2026"
LTI = "https://purl.imsglobal.org/spec/lti/claim/"
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
LINEITEM_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem"
RESULT_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/result.readonly"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"


def rsa_pem() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


class PlatformConf(LTI1P3PlatformConfAbstract):
    """lti1p3platform's platform, with the one registration of the tool under test."""

    def init_platform_config(self, **kwargs):
        self._registration = kwargs["registration"]

    def get_registration_by_params(self, **kwargs):
        return self._registration


class Platform:
    """The platform's state and its FastAPI app; `start()` serves it on 127.0.0.1."""

    def __init__(self, *, token_lifetime: int = 3600):
        self.private_key, self.public_key = rsa_pem()
        self.kid = JWK.from_pem(self.public_key.encode()).thumbprint()
        self.token_lifetime = token_lifetime
        self.members: list[dict] = []
        self.line_items: dict[str, dict] = {}
        self.scores: dict[str, list[dict]] = {}
        """line item id -> every score the platform accepted, in order."""
        self.tokens_issued = 0
        self.token_expiry: dict[str, float] = {}
        self.failures: list[int] = []
        self.failed = 0
        self.spoil: dict = {}
        self.url = ""
        self.registration = (Registration().set_iss(ISSUER).set_client_id(CLIENT_ID)
                             .set_deployment_id(DEPLOYMENT_ID).set_platform_public_key(self.public_key)
                             .set_platform_private_key(self.private_key))
        self.app = self._app()

    # --- what a test sets ------------------------------------------------------------------------
    def trust_tool_keys(self, *, key_set: dict | None = None, key_set_url: str | None = None) -> None:
        if key_set is not None:
            self.registration.set_tool_key_set(key_set)
        if key_set_url is not None:
            self.registration.set_tool_key_set_url(key_set_url)

    def enrol(self, user_id: str, *, sis_id: str | None = None, roles=(LEARNER,), name: str = "",
              status: str = "Active") -> None:
        member = {"user_id": user_id, "roles": list(roles), "status": status, "name": name or user_id}
        if sis_id is not None:
            member["lis_person_sourcedid"] = sis_id
        self.members.append(member)

    def fail_next(self, *statuses: int) -> None:
        self.failures.extend(statuses)

    def results(self, line_id: str) -> dict[str, dict]:
        """user id -> the score the platform holds (the newest by timestamp)."""
        held = {}
        for score in self.scores.get(line_id, []):
            held[score["userId"]] = score
        return held

    def registration_toml(self, *, student_id: str = "lis_person_sourcedid") -> str:
        return "\n".join([
            f'issuer = "{ISSUER}"', f'client_id = "{CLIENT_ID}"', f'deployment_ids = ["{DEPLOYMENT_ID}"]',
            f'auth_login_url = "{self.url}/api/lti/authorize_redirect"',
            f'auth_token_url = "{self.url}/login/oauth2/token"',
            f'key_set_url = "{self.url}/api/lti/security/jwks"',
            f'lineitems_url = "{self.url}/api/lti/courses/1/line_items"',
            f'memberships_url = "{self.url}/api/lti/courses/1/names_and_roles"',
            f'student_id = "{student_id}"', ""])

    # --- serving -----------------------------------------------------------------------------------
    def start(self) -> "Platform":
        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        sock.listen(64)
        self.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        self.server = uvicorn.Server(uvicorn.Config(self.app, log_level="warning"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)

    def id_token(self, *, user_id: str, nonce: str, roles=(LEARNER,)) -> str:
        """A launch's id_token as Canvas signs it (LtiResourceLinkRequest), spoilt as `spoil` says."""
        spoil = self.spoil
        now = int(time.time())
        claims = {
            "iss": ISSUER, "aud": spoil.get("aud", CLIENT_ID), "sub": user_id, "nonce": nonce,
            "iat": now, "exp": now + spoil.get("lifetime", 300), "azp": CLIENT_ID,
            LTI + "message_type": "LtiResourceLinkRequest", LTI + "version": "1.3.0",
            LTI + "deployment_id": spoil.get("deployment_id", DEPLOYMENT_ID),
            LTI + "target_link_uri": spoil.get("target_link_uri", ""),
            LTI + "resource_link": {"id": "rl-ps1"}, LTI + "roles": list(roles),
            LTI + "context": {"id": "course-1", "label": "RL"}}
        key = self.private_key
        if spoil.get("forge"):
            key, _ = rsa_pem()  # someone else's key, under the platform's kid
        return Registration.encode_and_sign(claims, key, headers={"kid": self.kid})

    def _app(self) -> FastAPI:
        app = FastAPI()
        conf = PlatformConf(registration=self.registration)

        def failing():
            if self.failures:
                status = self.failures.pop(0)
                self.failed += 1
                return JSONResponse({"error": "try again"}, status_code=status, headers={"Retry-After": "0"})
            return None

        def authorised(request: Request, scope: str):
            token = request.headers.get("authorization", "").removeprefix("Bearer ")
            try:
                valid = conf.validate_token(token, allowed_scopes=[scope])
            except Exception:  # noqa: BLE001 - any bad token is a 401, as Canvas answers
                valid = False
            if not valid or time.time() >= self.token_expiry.get(token, 0):
                return JSONResponse({"error": "invalid access token"}, status_code=401)
            return None

        @app.get("/api/lti/security/jwks")
        def jwks():
            return {"keys": [dict(Registration.get_jwk(self.public_key), kid=self.kid)]}

        @app.post("/login/oauth2/token")
        async def token(request: Request):
            form = dict(await request.form())
            try:
                answer = dict(conf.get_access_token(form))
            except Exception as error:  # noqa: BLE001 - lti1p3platform's refusals, as OAuth2's error
                return JSONResponse({"error": "invalid_client", "error_description": str(error)}, status_code=400)
            self.tokens_issued += 1
            self.token_expiry[answer["access_token"]] = time.time() + self.token_lifetime
            answer["expires_in"] = self.token_lifetime
            return answer

        @app.get("/api/lti/authorize_redirect")
        def authorize(request: Request):
            query = request.query_params
            if query.get("client_id") != CLIENT_ID or query.get("response_mode") != "form_post":
                return JSONResponse({"error": "invalid_request"}, status_code=400)
            member = next((m for m in self.members if m["user_id"] == query["login_hint"]), None)
            if member is None:
                return JSONResponse({"error": "not in the course"}, status_code=403)
            id_token = self.id_token(user_id=member["user_id"], nonce=query["nonce"], roles=member["roles"])
            return HTMLResponse(
                f'<form method="post" action="{html.escape(query["redirect_uri"])}">'
                f'<input name="id_token" value="{id_token}"><input name="state" '
                f'value="{html.escape(query["state"])}"></form>')

        @app.get("/api/lti/courses/1/line_items")
        def line_items(request: Request):
            return failing() or authorised(request, LINEITEM_SCOPE) or JSONResponse(
                list(self.line_items.values()), media_type="application/vnd.ims.lis.v2.lineitemcontainer+json")

        @app.post("/api/lti/courses/1/line_items")
        async def create_line_item(request: Request):
            refused = failing() or authorised(request, LINEITEM_SCOPE)
            if refused:
                return refused
            item = json.loads(await request.body())
            item["id"] = f"{self.url}/api/lti/courses/1/line_items/{len(self.line_items) + 1}"
            self.line_items[item["id"]] = item
            return JSONResponse(item, media_type="application/vnd.ims.lis.v2.lineitem+json")

        @app.get("/api/lti/courses/1/line_items/{number}/results")
        def results(number: int, request: Request):
            refused = failing() or authorised(request, RESULT_SCOPE)
            if refused:
                return refused
            line_id = f"{self.url}/api/lti/courses/1/line_items/{number}"
            maximum = float(self.line_items[line_id]["scoreMaximum"])  # results in the line item's points
            return JSONResponse([{"id": f"{line_id}/results/{user}", "scoreOf": line_id, "userId": user,
                                  "resultScore": score["scoreGiven"] * maximum / score["scoreMaximum"],
                                  "resultMaximum": maximum}
                                 for user, score in self.results(line_id).items()],
                                media_type="application/vnd.ims.lis.v2.resultcontainer+json")

        @app.post("/api/lti/courses/1/line_items/{number}/scores")
        async def scores(number: int, request: Request):
            refused = failing() or authorised(request, SCORE_SCOPE)
            if refused:
                return refused
            line_id = f"{self.url}/api/lti/courses/1/line_items/{number}"
            if line_id not in self.line_items:
                return JSONResponse({"error": "no such line item"}, status_code=404)
            score = json.loads(await request.body())
            if not any(member["user_id"] == score.get("userId") for member in self.members):
                return JSONResponse({"error": "user not in course"}, status_code=422)
            held = self.results(line_id).get(score["userId"])
            if held is not None and held["timestamp"] >= score["timestamp"]:
                return JSONResponse({"error": "score is older than the one held"}, status_code=409)
            self.scores.setdefault(line_id, []).append(score)
            return Response(status_code=204)

        @app.get("/api/lti/courses/1/names_and_roles")
        def memberships(request: Request):
            return failing() or authorised(request, NRPS_SCOPE) or JSONResponse(
                {"id": str(request.url), "context": {"id": "course-1"}, "members": self.members},
                media_type="application/vnd.ims.lti-nrps.v2.membershipcontainer+json")

        return app
