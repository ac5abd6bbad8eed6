"""`rlcourse web` under a deadline rush: a class of 2,000 with tokens, many submitting at once.

Copies ps1 (graders, release, source, solutions, the warm JAX cache) into a temporary course,
issues tokens to `--class-size` students, starts a real `rlcourse web` on a free loopback port,
grades one submission to warm the service's grading process, then has `--submitters` students
upload a demo notebook at the same moment (one thread each, as many browsers or clients would)
and polls each until it is graded, while another thread keeps asking for a student's page of
submissions. Prints:

* the first grading (cold: the grading process's start and the course copy's reference run),
* upload-to-graded times of the rush (median, 95th percentile, longest) and the throughput,
* what that throughput means for the whole class submitting in the last hour,
* the page's response time while the queue is full (median, 95th percentile).

With `--latency` it measures what one student waits instead (issue 35): the first submission
to a service started with `--no-warm` (it pays for the grading process, the graders and the fork
template), the first to a service started as `rlcourse web` starts by default, once its log says
every lane is ready, and the median of `--repeats` submissions after that, one at a time.

The demo notebooks were written for their own students' parameters ([variants]), so most score
less here than in the demo: this measures time, not marks. Nothing is kept.

    .venv/bin/python benchmarks/web_load.py [--submitters 30] [--class-size 2000]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

from nbgrader.api import Gradebook

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.directory import Course
from rlcourse.demo import STUDENTS, demo_notebooks
from rlcourse.web.client import multipart
from rlcourse.web.tokens import issue_tokens

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


DEMO = [path for student, path in demo_notebooks(Course(ROOT)).items() if STUDENTS[student] != "not_json"]
"""The demo's notebooks that are notebooks (edsger's is refused at upload, never graded), as
benchmarks/grade_throughput.py picks them."""


def copy_course(target: Path) -> None:
    target.mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", target)
    for folder in ("graders", "release", "source", "solutions"):
        shutil.copytree(ROOT / folder / "ps1", target / folder / "ps1",
                        ignore=shutil.ignore_patterns("__pycache__"))
    if (ROOT / ".rlcourse-cache").is_dir():
        shutil.copytree(ROOT / ".rlcourse-cache", target / ".rlcourse-cache")
    spec = target / "graders" / "ps1" / "assignment.toml"
    spec.write_text(spec.read_text() + "\n[web]\nsubmissions_per_window = 100\n")


def request(url: str, token: str, data: bytes | None = None, content_type: str | None = None):
    headers = {"Authorization": f"Bearer {token}"}
    if content_type:
        headers["Content-Type"] = content_type
    call = urllib.request.Request(url, data=data, headers=headers, method="POST" if data else "GET")
    try:
        with urllib.request.urlopen(call, timeout=120) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def submit_and_wait(url: str, token: str, notebook: Path, timeout: float = 3600) -> tuple[float, dict]:
    body, content_type = multipart({"assignment": "ps1"}, "notebook", notebook.name, notebook.read_bytes())
    started = time.monotonic()
    status, view = request(f"{url}/api/submissions", token, body, content_type)
    if status != 202:
        raise RuntimeError(f"upload refused ({status}): {view}")
    while time.monotonic() - started < timeout:
        view = request(f"{url}/api/submissions/{view['id']}", token)[1]
        if view["status"] in ("graded", "failed"):
            return time.monotonic() - started, view
        time.sleep(0.5)
    raise RuntimeError(f"#{view['id']} not graded after {timeout} s")


def start_service(course: Path, class_dir: Path, log: Path, *args: str):
    """`rlcourse web` on a free loopback port: (process, url)."""
    env = {key: value for key, value in os.environ.items() if key != "RLCOURSE_ROOT"}
    env["PATH"] = f"{BIN}:{env.get('PATH', '')}"
    server = subprocess.Popen([str(BIN / "rlcourse"), "web", "--port", "0", "--course-dir", str(class_dir), *args],
                              cwd=course, env=env, stdout=subprocess.PIPE, stderr=open(log, "w"), text=True)
    return server, server.stdout.readline().split(" on ")[1].split()[0].rstrip("/")


def latency(scratch: Path, repeats: int) -> int:
    """Upload to feedback for one student at a time: cold, first after warming, then warm."""
    course = scratch / "course"
    copy_course(course)
    # The course copy's reference run, once, before either service: a course pays it once (it
    # is recorded), so neither measurement below should.
    subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                    "from rlcourse.batch.backends import GraderSettings, warm_once; "
                    "from rlcourse.course.directory import Course; "
                    "warm_once(Course(Path(sys.argv[1])).assignment('ps1'), GraderSettings())", str(course)],
                   check=True, cwd=course, capture_output=True)
    students = ["cold", "first"] + [f"s{number}" for number in range(repeats)]
    results = {}
    for mode, args in (("cold", ("--no-warm", "--graders", "1")), ("warm", ("--graders", "1"))):
        class_dir = scratch / f"class-{mode}"
        tokens = dict(issue_tokens(ClassDirectory(class_dir), students=students, staff=[]))
        with Gradebook(ClassDirectory(class_dir).db_url) as gradebook:
            gradebook.update_or_create_assignment("ps1")
        log = scratch / f"web-{mode}.log"
        started = time.monotonic()
        server, url = start_service(course, class_dir, log, *args)
        try:
            if mode == "cold":
                results["cold"] = submit_and_wait(url, tokens["cold"], DEMO[0])[0]
                continue
            while "ps1 ready for grading" not in log.read_text():
                if "could not be made ready" in log.read_text() or server.poll() is not None:
                    print(log.read_text())
                    return 1
                time.sleep(0.2)
            results["ready after start"] = time.monotonic() - started
            results["first"] = submit_and_wait(url, tokens["first"], DEMO[0])[0]
            results["warm"] = [submit_and_wait(url, tokens[name], DEMO[0])[0] for name in students[2:]]
        finally:
            server.terminate()
            server.wait(timeout=60)
    median = statistics.median(results["warm"])
    print(f"one student at a time, ps1 ({DEMO[0].parent.parent.name}'s notebook), one grading lane:")
    print(f"  first submission, service started with --no-warm: {results['cold']:.1f} s")
    print(f"  service started (warming by default): every lane ready {results['ready after start']:.1f} s after start")
    print(f"  first submission after that: {results['first']:.1f} s ({results['first'] / median:.2f}x the warm median)")
    print(f"  then {repeats} submissions one after another: median {median:.1f} s, "
          f"fastest {min(results['warm']):.1f} s, slowest {max(results['warm']):.1f} s")
    return 0


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(fraction * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submitters", type=int, default=30)
    parser.add_argument("--class-size", type=int, default=2000)
    parser.add_argument("--latency", action="store_true",
                        help="one student at a time: cold, first after warming, warm median")
    parser.add_argument("--repeats", type=int, default=10, help="warm submissions for --latency")
    args = parser.parse_args()
    if args.latency:
        with tempfile.TemporaryDirectory(prefix="rlcourse-web-latency-") as scratch:
            return latency(Path(scratch), args.repeats)
    with tempfile.TemporaryDirectory(prefix="rlcourse-web-load-") as scratch:
        course, class_dir = Path(scratch) / "course", Path(scratch) / "class"
        copy_course(course)
        students = [f"s{number:04d}" for number in range(args.class_size)]
        began = time.monotonic()
        tokens = dict(issue_tokens(ClassDirectory(class_dir), students=students, staff=[]))
        print(f"tokens for {args.class_size} students: {time.monotonic() - began:.1f} s")
        with Gradebook(ClassDirectory(class_dir).db_url) as gradebook:  # ps1 released to the class
            gradebook.update_or_create_assignment("ps1")
        # --no-warm: the first grading below warms the service on purpose (`--latency` measures
        # what warming at start saves).
        server, url = start_service(course, class_dir, Path(scratch) / "web.log", "--no-warm")
        try:
            first, view = submit_and_wait(url, tokens[students[0]], DEMO[0])
            print(f"first grading (cold process, course copy's reference run): {first:.1f} s, {view['status']}")

            rush = students[1:1 + args.submitters]
            waits: dict[str, tuple[float, dict] | Exception] = {}
            page_times: list[float] = []
            done = threading.Event()

            def student(name: str, notebook: Path) -> None:
                try:
                    waits[name] = submit_and_wait(url, tokens[name], notebook)
                except Exception as error:  # noqa: BLE001 - reported below
                    waits[name] = error

            def reader() -> None:
                while not done.is_set():
                    started = time.monotonic()
                    request(f"{url}/api/submissions", tokens[students[-1]])
                    page_times.append(time.monotonic() - started)
                    time.sleep(0.2)

            threads = [threading.Thread(target=student, args=(name, DEMO[index % len(DEMO)]))
                       for index, name in enumerate(rush)]
            watcher = threading.Thread(target=reader)
            started = time.monotonic()
            watcher.start()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            wall = time.monotonic() - started
            done.set()
            watcher.join()
        finally:
            server.terminate()
            server.wait(timeout=60)
        failed = [name for name, result in waits.items() if isinstance(result, Exception)
                  or result[1]["status"] != "graded"]
        times = [result[0] for result in waits.values() if not isinstance(result, Exception)]
        rate = len(times) / wall * 60
        print(f"rush: {len(rush)} students at once, {len(rush) - len(failed)} graded, {len(failed)} not")
        for name in failed:
            result = waits[name]
            print(f"  {name} not graded: {result if isinstance(result, Exception) else result[1]}")
        if failed:
            print("the service's log ends:\n" + "\n".join(
                (Path(scratch) / "web.log").read_text().splitlines()[-20:]))
        print(f"  upload to graded: median {statistics.median(times):.1f} s, 95th percentile "
              f"{percentile(times, 0.95):.1f} s, longest {max(times):.1f} s")
        print(f"  throughput: {rate:.1f} gradings a minute ({wall / len(times):.2f} s each, one grading process)")
        print(f"  the whole class of {args.class_size} at once would wait up to "
              f"{args.class_size / rate:.0f} min for the last feedback")
        print(f"  a student's page while the queue was full: median {statistics.median(page_times) * 1000:.0f} ms, "
              f"95th percentile {percentile(page_times, 0.95) * 1000:.0f} ms ({len(page_times)} requests)")
        return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
