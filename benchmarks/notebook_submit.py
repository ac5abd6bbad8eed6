"""Time to feedback from the notebook's submit cell, beside `rlcourse submit`'s (issue 32, item 5).

Copies ps1 into a temporary course (benchmarks/web_load.py's copy), starts a real `rlcourse web`,
warms it with one grading, then, `--repeats` times each and taking turns: a real IPython kernel
(jupyter_client, as a notebook server starts one for `ps1.ipynb`) runs the released submit cell
with a hub user's environment, the benchmark answering the cell's save request as JupyterLab
would (it rewrites the file), from the cell's start until its feedback is drawn; and `rlcourse
submit` in a terminal, from its start until it prints the feedback. One student each time
(another's submission of the same notebook would queue behind it), so this is the time a student
waits on a quiet service, not under a rush (benchmarks/web_load.py). The service takes an
rlcourse token where the hub's would be: the hub's own check of the token is not timed here
(tests/web/test_jupyterhub_real.py runs the cell on a real hub). Nothing is kept.

    .venv/bin/python benchmarks/notebook_submit.py [--repeats 3]
"""
from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jupyter_client.manager import KernelManager
from nbgrader.api import Gradebook
from web_load import BIN, DEMO, ROOT, copy_course, submit_and_wait

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.web.hub_config import kernel_files
from rlcourse.web.tokens import issue_tokens

NOTEBOOK = next(path for path in DEMO if path.parent.parent.name == "ada")


def released_cell() -> dict:
    return json.loads((ROOT / "release" / "ps1" / "ps1.ipynb").read_text())["cells"][-1]


def run_the_cell(url: str, token: str, student: str, home: Path, kernel_dir: Path) -> tuple[float, str]:
    """(seconds from the cell's start to its feedback, the feedback's HTML) in a fresh kernel."""
    notebook = home / "ps1.ipynb"
    content = json.loads(NOTEBOOK.read_text())
    content["cells"].append(released_cell())
    notebook.write_text(json.dumps(content))
    env = dict(os.environ, PYTHONPATH=str(kernel_dir), JUPYTERHUB_API_TOKEN=token, JUPYTERHUB_USER=student,
               RLCOURSE_SERVICE_URL=url, JPY_SESSION_NAME=str(notebook))
    manager = KernelManager(kernel_name="python3")
    manager.start_kernel(env=env, cwd=str(home))
    client = manager.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=120)
        started = time.monotonic()
        msg_id = client.execute("".join(released_cell()["source"]))
        html = ""
        while True:
            try:
                message = client.get_iopub_msg(timeout=900)
            except queue.Empty:
                raise RuntimeError("the cell did not finish in 900 s") from None
            if message["parent_header"].get("msg_id") != msg_id:
                continue
            data = message["content"].get("data", {})
            if "docmanager:save" in data.get("application/javascript", ""):
                notebook.write_text(notebook.read_text())  # the front end saving it
            if data.get("text/html"):
                html = data["text/html"]
            if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
                return time.monotonic() - started, html
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def run_the_terminal_client(url: str, token: str, course: Path) -> float:
    started = time.monotonic()
    done = subprocess.run([str(BIN / "rlcourse"), "submit", "ps1", str(NOTEBOOK), "--server", url, "--token", token],
                          cwd=course, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(f"rlcourse submit: {done.stderr}")
    return time.monotonic() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rlcourse-notebook-submit-") as scratch:
        scratch = Path(scratch)
        course, class_dir, kernel_dir = scratch / "course", scratch / "class", scratch / "kernel"
        copy_course(course)
        kernel_dir.mkdir()
        for name, content in kernel_files().items():
            (kernel_dir / name).write_bytes(content)
        students = [f"s{number:02d}" for number in range(2 * args.repeats + 1)]
        tokens = dict(issue_tokens(ClassDirectory(class_dir), students=students, staff=[]))
        with Gradebook(ClassDirectory(class_dir).db_url) as gradebook:
            gradebook.update_or_create_assignment("ps1")
        env = {key: value for key, value in os.environ.items() if key != "RLCOURSE_ROOT"}
        env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
        server = subprocess.Popen([str(BIN / "rlcourse"), "web", "--port", "0", "--course-dir", str(class_dir)],
                                  cwd=course, env=env, stdout=subprocess.PIPE,
                                  stderr=open(scratch / "web.log", "w"), text=True)
        try:
            url = server.stdout.readline().split(" on ")[1].split()[0].rstrip("/")
            first, view = submit_and_wait(url, tokens[students[0]], NOTEBOOK)
            print(f"first grading (cold process, course copy's reference run): {first:.1f} s, {view['status']}")
            cell, terminal = [], []
            for repeat in range(args.repeats):
                student = students[1 + 2 * repeat]
                home = scratch / "home" / student
                home.mkdir(parents=True)
                seconds, html = run_the_cell(url, tokens[student], student, home, kernel_dir)
                if "Score:" not in html:
                    raise RuntimeError(f"the cell showed no score: {html[:500]}")
                cell.append(seconds)
                terminal.append(run_the_terminal_client(url, tokens[students[2 + 2 * repeat]], course))
                print(f"  run {repeat + 1}: the cell {cell[-1]:.1f} s, rlcourse submit {terminal[-1]:.1f} s")
        finally:
            server.terminate()
            server.wait(timeout=60)
        print(f"time to feedback, warm service, ps1 ({args.repeats} runs each, median): "
              f"the notebook's submit cell {statistics.median(cell):.1f} s, "
              f"rlcourse submit {statistics.median(terminal):.1f} s")
        return 0


if __name__ == "__main__":
    sys.exit(main())
