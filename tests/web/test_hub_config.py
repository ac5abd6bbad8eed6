"""`rlcourse hub config`: the jupyterhub_config.py it writes, read back as JupyterHub reads it
(traitlets' loader), gives the hub what the submit cell needs. A real hub runs on it in
tests/web/test_jupyterhub_real.py."""
import json
import stat
import subprocess
from pathlib import Path

from traitlets.config.loader import PyFileConfigLoader
from webserver import BIN, ROOT, environment, rlcourse

from rlcourse.web import client, notebook_submit


def load(path: Path):
    return PyFileConfigLoader(path.name, path=str(path.parent)).load_config()


def test_the_command_writes_a_config_the_hub_can_load(tmp_path):
    output = tmp_path / "hub" / "jupyterhub_config.py"
    class_dir = tmp_path / "class"
    done = rlcourse(ROOT, "hub", "config", "--course-dir", class_dir, "--output", output, "--service-port", "10123")
    assert done.stdout.strip() == f"wrote {output}; start the hub with: jupyterhub -f {output}"
    config = load(output)

    service, = config.JupyterHub.services
    assert service["name"] == "rlcourse" and service["url"] == "http://127.0.0.1:10123"
    assert service["command"][1:] == ["web", "--jupyterhub", "--course-dir", str(class_dir.resolve())]
    assert Path(service["command"][0]).name == "rlcourse" and service["cwd"] == str(ROOT)
    # every user may use the service, and their server's own token carries the scope the cell needs
    user_role, = config.JupyterHub.load_roles
    assert user_role["name"] == "user" and "access:services!service=rlcourse" in user_role["scopes"]
    assert "access:services!service=rlcourse" in config.Spawner.server_token_scopes
    assert {"users:activity!user", "access:servers!server"} <= set(config.Spawner.server_token_scopes)

    environment = config.Spawner.environment
    assert environment["RLCOURSE_SERVICE_URL"] == "http://127.0.0.1:10123/services/rlcourse"
    assert environment["RLCOURSE_COURSE_ID"] == "rlcourse"  # the course's nbgrader_config.py
    kernel = Path(environment["PYTHONPATH"])
    assert (kernel / "rlcourse_submit.py").read_bytes() == Path(notebook_submit.__file__).read_bytes()
    assert (kernel / "rlcourse_client.py").read_bytes() == Path(client.__file__).read_bytes()
    assert "--LabApp.expose_app_in_browser=True" in config.Spawner.args


def test_every_user_shares_nbgraders_exchange(tmp_path):
    output, exchange = tmp_path / "jupyterhub_config.py", tmp_path / "srv" / "exchange"
    rlcourse(ROOT, "hub", "config", "--course-dir", tmp_path / "class", "--output", output,
             "--exchange", exchange, "--course-id", "rl101")
    users = load(Path(load(output).Spawner.environment["JUPYTER_CONFIG_PATH"]) / "nbgrader_config.py")
    assert users.Exchange.root == str(exchange) and users.CourseDirectory.course_id == "rl101"
    assert stat.S_IMODE(exchange.stat().st_mode) == 0o1777  # all write, none removes another's


def test_a_folder_as_output_is_refused_with_the_reason(tmp_path):
    done = rlcourse(ROOT, "hub", "config", "--output", tmp_path, check=False)
    assert done.returncode != 0 and "is a folder" in done.stderr


FOUND_EXTENSIONS = """
import json
from jupyter_server.serverapp import ServerApp
app = ServerApp()
app.find_server_extensions()
print(json.dumps(app.jpserver_extensions))
"""
"""How a Jupyter server finds the extensions it loads (its configuration path's
jupyter_server_config.d), printed."""


def test_the_users_servers_load_the_toolbar_buttons_extension(tmp_path):
    """The users' servers, on the configuration path the hub gives them, load the server side of
    JupyterLab's Submit to rlcourse button; without that path they do not."""
    output = tmp_path / "jupyterhub_config.py"
    rlcourse(ROOT, "hub", "config", "--course-dir", tmp_path / "class", "--output", output)
    users_config = load(output).Spawner.environment["JUPYTER_CONFIG_PATH"]

    def found(**env):
        done = subprocess.run([str(BIN / "python"), "-c", FOUND_EXTENSIONS], capture_output=True, text=True,
                              timeout=120, cwd=tmp_path, check=True,
                              env=dict(environment(), JUPYTER_CONFIG_DIR=str(tmp_path / "home"), **env))
        return json.loads(done.stdout.splitlines()[-1])

    assert found(JUPYTER_CONFIG_PATH=users_config).get("jupyterlab_rlcourse") is True
    assert "jupyterlab_rlcourse" not in found()
