"""`rlcourse web --jupyterhub`: the service behind JupyterHub's own OAuth.

Run as a JupyterHub service, the hub starts it (or it runs beside the hub) with the service's
environment: `JUPYTERHUB_API_TOKEN` (its token, also the OAuth client secret),
`JUPYTERHUB_CLIENT_ID`, `JUPYTERHUB_API_URL`, `JUPYTERHUB_SERVICE_PREFIX` (where the hub's proxy
sends its requests, e.g. `/services/rlcourse/`) and `JUPYTERHUB_OAUTH_CALLBACK_URL`. A student
logged into the hub then needs no rlcourse token: the page sends them through the hub's OAuth
(authorization code with PKCE) and knows them by their hub user name, which is their student id,
the id their notebook's parameter cell reads from `JUPYTERHUB_USER`. Scripts, and the client
from a hub terminal, may send any hub token of theirs (`JUPYTERHUB_API_TOKEN` in their server)
as the bearer token instead.

Everything that talks to the hub is JupyterHub's own `HubOAuth` (jupyterhub.services.auth): the
state and its PKCE verifier, the code-for-token exchange, and asking the hub who a token belongs
to. What is decided here: who is staff (hub admins, and members of the `--staff-group`), and
that a hub token must carry the scope to access this service (`access:services!service=NAME`),
as the hub's own service handlers require.
"""
from __future__ import annotations

import os
from typing import NamedTuple

from rlcourse.course.directory import CourseError

DEFAULT_STAFF_GROUP = "rlcourse-staff"
ENVIRONMENT = ("JUPYTERHUB_API_TOKEN", "JUPYTERHUB_SERVICE_PREFIX")
"""Both set: rlcourse web runs as a JupyterHub service (the hub sets them for its services)."""


def running_under_hub(environ=None) -> bool:
    environ = os.environ if environ is None else environ
    return all(environ.get(name) for name in ENVIRONMENT)


class HubUser(NamedTuple):
    """A hub user as the routes see any signed-in identity (like an rlcourse token's row)."""
    user: str
    staff: bool


class HubLogin:
    """Who a browser or a token is, as the hub says."""

    def __init__(self, *, staff_group: str = DEFAULT_STAFF_GROUP):
        try:
            from jupyterhub.services.auth import HubOAuth
        except ImportError:
            raise CourseError("--jupyterhub needs JupyterHub's client code: install rlcourse[hub] "
                              "(`make install` does)") from None
        if not os.environ.get("JUPYTERHUB_API_TOKEN"):
            raise CourseError("--jupyterhub: $JUPYTERHUB_API_TOKEN is not set; run rlcourse web as a "
                              "service of the hub (c.JupyterHub.services, see docs/instructors/jupyterhub.md)")
        self.auth = HubOAuth(cache_max_age=60)
        if not self.auth.access_scopes:
            raise CourseError("--jupyterhub: neither $JUPYTERHUB_SERVICE_NAME nor "
                              "$JUPYTERHUB_OAUTH_ACCESS_SCOPES is set (the hub sets both for its services)")
        self.staff_group = staff_group
        self.prefix = "/" + self.auth.base_url.strip("/") if self.auth.base_url.strip("/") else ""
        """Where the hub's proxy sends this service's requests, without the final slash."""

    def start(self, next_url: str) -> tuple[str, str]:
        """(the hub's authorization URL to send the browser to, the state to keep in its cookie)."""
        from tornado.httputil import url_concat

        verifier, challenge, method = self.auth.generate_pkce_code_challenge()
        state = self.auth.generate_state(next_url, code_verifier=verifier)
        return url_concat(self.auth.login_url, {"state": state, "code_challenge": challenge,
                                                "code_challenge_method": method}), state

    async def finish(self, code: str, state: str) -> tuple[str, bool, str]:
        """(user name, staff, where to go next) for the hub's answer to `start`; PermissionError
        when the hub or the state says no."""
        verifier = self.auth.get_code_verifier(state)
        if verifier is None:
            raise PermissionError("this sign-in expired or was not started here; sign in again")
        next_url = self.auth.get_next_url(state)
        self.auth.clear_oauth_state(state)
        token = await self.auth.token_for_code(code, code_verifier=verifier, sync=False)
        user = await self.identify(token)
        if user is None:
            raise PermissionError("the hub did not confirm who you are")
        return user.user, user.staff, next_url

    async def identify(self, token: str) -> HubUser | None:
        """Who a hub token belongs to, if they may use this service; None otherwise."""
        from tornado.web import HTTPError

        try:
            return self._judge(await self.auth.user_for_token(token, sync=False))
        except HTTPError:
            return None

    def identify_blocking(self, token: str) -> HubUser | None:
        """`identify`, for a route that runs off the event loop (HubOAuth's own thread asks)."""
        from tornado.web import HTTPError

        try:
            return self._judge(self.auth.user_for_token(token))
        except HTTPError:
            return None

    def _judge(self, model: dict | None) -> HubUser | None:
        if not model or model.get("kind", "user") != "user" or not model.get("name"):
            return None  # no such token, or a service's
        try:
            allowed = self.auth.check_scopes(self.auth.access_scopes, dict(scopes=model.get("scopes") or []))
        except ValueError:  # scopes the hub's own parser refuses
            allowed = False
        if not allowed:
            return None  # a token of theirs that may not use this service
        staff = bool(model.get("admin")) or self.staff_group in (model.get("groups") or [])
        return HubUser(str(model["name"]), staff)
