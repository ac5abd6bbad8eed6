"""jupyterlab_rlcourse: JupyterLab's "Submit to rlcourse" button, and the server side it calls.

The button (src/index.ts, built into `labextension/`) saves the notebook with JupyterLab's own
save, then POSTs its path and assignment to this server's `/rlcourse/submit`
(jupyterlab_rlcourse.handlers). The handler sends the saved file to the course's `rlcourse web`
with the server's `JUPYTERHUB_API_TOKEN`, so the token never reaches the page, and answers with
the feedback the course's policy allows now.

`rlcourse hub config` enables the server extension for the hub's users; the front end is found
by JupyterLab among the environment's lab extensions.
"""


def _jupyter_labextension_paths():
    """Where JupyterLab finds the built front end (`jupyter labextension develop` links it)."""
    return [{"src": "labextension", "dest": "jupyterlab-rlcourse"}]


def _jupyter_server_extension_points():
    return [{"module": "jupyterlab_rlcourse"}]


def _load_jupyter_server_extension(server_app):
    from jupyterlab_rlcourse.handlers import add_handlers

    add_handlers(server_app.web_app)
    server_app.log.info("jupyterlab_rlcourse: the Submit to rlcourse button's handler is at /rlcourse/submit")
