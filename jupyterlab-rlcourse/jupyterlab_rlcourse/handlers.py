"""`POST /rlcourse/submit` on the user's Jupyter server: the button's one request.

Body: `{"path": "<the notebook's path from the server's root>", "assignment": "ps1"}`. The
front end has saved the notebook with JupyterLab's own save before it asks, so the file on disk
is what the student sees; this handler reads that file and submits it with rlcourse's notebook
client (rlcourse.web.notebook_submit: the submit cell's, reused as it is) as the server's hub
user, with the server's `JUPYTERHUB_API_TOKEN`. The token stays in this process: the page never
sees it. Only the server's own user reaches the handler (Jupyter's authentication, and its XSRF
check on a browser's POST), and the client refuses a token that is not `JUPYTERHUB_USER`'s.

Answers, as JSON:
* 200 `{"submitted": true, "view": ..., "html": ..., "feedback_url": ...}`: graded (or failed on
  the server), with the feedback the course's policy allows now, drawn as the submit cell draws
  it (notebook_submit.feedback_html) and the full page's link;
* 409 `{"submitted": false, "reason": ...}`: nothing was sent, and why (not on the course's hub,
  the service refused or cannot be reached, another user's token);
* 400 / 404: no assignment, or no such notebook under the server's root.
"""
from __future__ import annotations

import asyncio
import os
from pathlib import Path

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.utils import url_path_join
from tornado import web

try:  # where rlcourse is installed beside the server
    from rlcourse.web import notebook_submit
except ImportError:  # the hub's copy for the users (rlcourse hub config's kernel folder, on PYTHONPATH)
    import rlcourse_submit as notebook_submit  # type: ignore[no-redef]

ROUTE = "rlcourse/submit"


def hub_account(environ=None) -> tuple[str, str, str] | None:
    """(service URL, token, hub user) when this server is a hub user's, with the course's service
    set (rlcourse hub config); None anywhere else."""
    environ = os.environ if environ is None else environ
    if not all(environ.get(name) for name in notebook_submit.HUB_ENVIRONMENT):
        return None
    return (environ[notebook_submit.SERVICE_URL].rstrip("/"), environ["JUPYTERHUB_API_TOKEN"],
            environ["JUPYTERHUB_USER"])


def saved_notebook(root_dir: str, path: str) -> Path:
    """The notebook `path` (from the server's root, as JupyterLab names it) on disk; 404 when it
    is not a notebook under the root."""
    root = Path(root_dir).resolve()
    notebook = (root / path.lstrip("/")).resolve()
    if notebook.suffix != ".ipynb" or not notebook.is_relative_to(root) or not notebook.is_file():
        raise web.HTTPError(404, f"no notebook {path!r} on this server")
    return notebook


class SubmitHandler(APIHandler):
    """Submit the saved notebook and answer with its feedback (the module's docstring)."""

    auth_resource = "contents"  # it reads a file of the user's, as the contents API does

    @web.authenticated
    @authorized
    async def post(self):
        body = self.get_json_body() or {}
        path, assignment = body.get("path"), body.get("assignment")
        if not isinstance(path, str) or not isinstance(assignment, str) or not assignment.strip():
            raise web.HTTPError(400, "the request needs the notebook's path and its assignment")
        notebook = saved_notebook(self.contents_manager.root_dir, path)
        account = hub_account()
        if account is None:
            return self.refuse(notebook_submit.elsewhere_advice(assignment, notebook.name))
        service, token, user = account
        try:  # the client blocks until the grade is in: off the server's event loop
            view = await asyncio.to_thread(notebook_submit.submit_saved_notebook, service=service, token=token,
                                           user=user, assignment=assignment, notebook=notebook)
        except notebook_submit.NotSubmitted as reason:
            return self.refuse(str(reason))
        page = notebook_submit.feedback_page(service, view)
        self.finish({"submitted": True, "view": view, "feedback_url": page,
                     "html": notebook_submit.feedback_html(view, feedback_url=page)})

    def refuse(self, reason: str) -> None:
        self.set_status(409)
        self.finish({"submitted": False, "reason": reason})


def add_handlers(web_app) -> None:
    route = url_path_join(web_app.settings["base_url"], ROUTE)
    web_app.add_handlers(".*$", [(route, SubmitHandler)])
