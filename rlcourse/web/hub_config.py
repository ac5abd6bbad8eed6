"""`rlcourse hub config`: one `jupyterhub_config.py` that stands up a course on JupyterHub.

What it configures, and why each part is needed (docs/operators/deployment.md):

* `rlcourse web` as a hub-managed service (`c.JupyterHub.services`): the hub starts it with its
  service token, and the proxy serves it at `/services/rlcourse/`;
* every user may use the service (the `user` role gets `access:services!service=rlcourse`), and
  each single-user server's own `$JUPYTERHUB_API_TOKEN` carries that scope too
  (`c.Spawner.server_token_scopes`; by default it has `users:activity!user` and
  `access:servers!server` only, and the service refuses a token without it): that token is what
  the notebook's submit cell (rlcourse.web.notebook_submit) sends;
* each user's environment: the service's URL (`RLCOURSE_SERVICE_URL`), the course's id, the
  folder holding the kernel's copy of the submit cell's client on `PYTHONPATH` (written here,
  beside the config: the kernels need nothing of rlcourse), and an nbgrader configuration on
  `JUPYTER_CONFIG_PATH` that points every user at the one shared exchange;
* JupyterLab and Notebook 7 expose their application to the page (`expose_app_in_browser`), so
  the cell can ask the front end to save the notebook before it is sent;
* the users' servers load `jupyterlab_rlcourse`, the server side of JupyterLab's "Submit to
  rlcourse" toolbar button (jupyterlab-rlcourse/ in the repository), through the same
  configuration folder: the button does what the cell does, the hub token kept in the server. A
  server whose environment lacks that package logs it and runs on; the cell still works.

What it leaves to the hub's defaults: the authenticator (PAM: the machine's users) and the
spawner (LocalProcessSpawner: each user's server runs as that system user). A cluster changes
those lines and the service's URL (docs/operators/deployment.md).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

from rlcourse.course.directory import CourseError

SERVICE_NAME = "rlcourse"
DEFAULT_SERVICE_PORT = 10101
KERNEL_FOLDER = "rlcourse-kernel"
"""Beside the config: the submit cell's client for the kernels (rlcourse_submit.py, rlcourse_client.py)."""
JUPYTER_CONFIG_FOLDER = "rlcourse-jupyter-config"
"""Beside the config: the users' nbgrader_config.py (the shared exchange, the course's id) and
the server extension that the toolbar button calls, enabled."""
LAB_SERVER_EXTENSION = "jupyterlab_rlcourse"
"""The Jupyter server extension of JupyterLab's "Submit to rlcourse" button (jupyterlab-rlcourse/)."""
SERVER_SCOPES = ("users:activity!user", "access:servers!server", f"access:services!service={SERVICE_NAME}")
"""JupyterHub's own `server` role's scopes, and the service's."""


def rlcourse_command() -> list[str]:
    """How the hub starts `rlcourse`: the script of this installation."""
    script = Path(sys.executable).parent / "rlcourse"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "rlcourse.cli"]


def course_id_of(course_root: Path) -> str:
    """nbgrader's course id, as the course's nbgrader_config.py sets it (else the folder's name)."""
    from traitlets.config.loader import ConfigFileNotFound, PyFileConfigLoader

    try:
        config = PyFileConfigLoader("nbgrader_config.py", path=str(course_root)).load_config()
    except ConfigFileNotFound:
        return Path(course_root).resolve().name
    return str(config.CourseDirectory.get("course_id") or Path(course_root).resolve().name)


def config_text(*, course_root: Path, class_dir: Path, course_id: str, exchange: Path, kernel_dir: Path,
                jupyter_config_dir: Path, service_port: int) -> str:
    """The jupyterhub_config.py, every value written out so an operator can read and edit it."""
    service_url = f"http://127.0.0.1:{service_port}"
    command = rlcourse_command() + ["web", "--jupyterhub", "--course-dir", str(class_dir)]
    return f'''"""JupyterHub for the course {course_id}: written by `rlcourse hub config`.

Start it with `jupyterhub -f {'{this file}'}`. Users sign in with the hub's authenticator (by
default the machine's own users); a student's notebook ends with a cell that submits it to the
course's service (/services/{SERVICE_NAME}/) and shows the hidden graders' feedback inline.
"""
c = get_config()  # noqa: F821 - provided by JupyterHub when it loads this file

# rlcourse web as a service the hub starts and stops, behind the hub's proxy at /services/{SERVICE_NAME}/.
c.JupyterHub.services = [{{
    "name": {SERVICE_NAME!r},
    "url": {service_url!r},
    "command": {command!r},
    "cwd": {str(course_root)!r},
    "oauth_no_confirm": True,
}}]
# Every user may use the service; each user's server token may too (the submit cell sends it).
c.JupyterHub.load_roles = [
    {{"name": "user", "scopes": ["self", "access:services!service={SERVICE_NAME}"]}},
]
c.Spawner.server_token_scopes = {list(SERVER_SCOPES)!r}
# Each user's environment: where the service is, the course, the submit cell's client, and
# nbgrader's configuration (the shared exchange).
c.Spawner.environment = {{
    "RLCOURSE_SERVICE_URL": {service_url + "/services/" + SERVICE_NAME!r},
    "RLCOURSE_COURSE_ID": {course_id!r},
    "PYTHONPATH": {str(kernel_dir)!r},
    "JUPYTER_CONFIG_PATH": {str(jupyter_config_dir)!r},
}}
# The cell asks the page to save the notebook before sending it: JupyterLab's and Notebook 7's
# application must be reachable from the page for that.
c.Spawner.args = ["--LabApp.expose_app_in_browser=True", "--JupyterNotebookApp.expose_app_in_browser=True"]
# Users start in JupyterLab.
c.Spawner.default_url = "/lab"
'''


def nbgrader_user_config(*, course_id: str, exchange: Path) -> str:
    return (f'"""nbgrader for the users of the course {course_id}: written by `rlcourse hub config`."""\n'
            "c = get_config()  # noqa: F821 - provided by nbgrader\n"
            f"c.CourseDirectory.course_id = {course_id!r}\n"
            f"c.Exchange.root = {str(exchange)!r}\n")


def kernel_files() -> dict[str, bytes]:
    """The submit cell's client as the kernels import it: this package's two stdlib-only files."""
    from rlcourse.web import client, notebook_submit

    return {"rlcourse_submit.py": Path(notebook_submit.__file__).read_bytes(),
            "rlcourse_client.py": Path(client.__file__).read_bytes()}


def write_hub_config(*, course_root: Path, class_dir: Path, output: Path, course_id: str,
                     exchange: Path | None = None, service_port: int = DEFAULT_SERVICE_PORT) -> Path:
    """Write `output` (jupyterhub_config.py) and, beside it, the kernels' client and the users'
    nbgrader configuration; make the exchange (shared: every user writes their submissions into
    it, nbgrader's own layout). The path written."""
    output = Path(output).resolve()
    if output.is_dir():
        raise CourseError(f"--output {output} is a folder: give the file to write, e.g. {output}/jupyterhub_config.py")
    output.parent.mkdir(parents=True, exist_ok=True)
    exchange = Path(exchange or class_dir / "exchange").resolve()
    exchange.mkdir(parents=True, exist_ok=True)
    os.chmod(exchange, 0o1777)  # nbgrader's exchange: every user writes, none removes another's
    kernel_dir = output.parent / KERNEL_FOLDER
    if kernel_dir.exists():
        shutil.rmtree(kernel_dir)  # a copy of the package's files: always the installed version
    kernel_dir.mkdir()
    for name, content in kernel_files().items():
        (kernel_dir / name).write_bytes(content)
    jupyter_config_dir = output.parent / JUPYTER_CONFIG_FOLDER
    jupyter_config_dir.mkdir(exist_ok=True)
    (jupyter_config_dir / "nbgrader_config.py").write_text(nbgrader_user_config(course_id=course_id, exchange=exchange))
    enabled = jupyter_config_dir / "jupyter_server_config.d"
    enabled.mkdir(exist_ok=True)  # how Jupyter enables a server extension: one file per extension
    (enabled / f"{LAB_SERVER_EXTENSION}.json").write_text(json.dumps(
        {"ServerApp": {"jpserver_extensions": {LAB_SERVER_EXTENSION: True}}}, indent=2) + "\n")
    output.write_text(config_text(course_root=Path(course_root).resolve(), class_dir=Path(class_dir).resolve(),
                                  course_id=course_id, exchange=exchange, kernel_dir=kernel_dir,
                                  jupyter_config_dir=jupyter_config_dir, service_port=service_port))
    return output
