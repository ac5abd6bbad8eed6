"""Benchmark: the Gradescope autograder's zip and one upload graded inside a simulated /autograder.

A measurement, not a test: it prints figures, and no threshold makes it fail.

    .venv/bin/python benchmarks/gradescope_autograder.py [--student alan] [--repeats 3]

What it prints:
1. building autograder.zip (`rlcourse gradescope ps1`): seconds, the zip's size and entry count;
2. warming JAX's compilation cache in the unpacked zip, as setup.sh's last step does once per
   Gradescope image;
3. one upload (a demo student's notebook), from starting run_autograder to results.json, with
   the zip unpacked into a folder that bubblewrap mounts at /autograder, as Gradescope lays it
   out: each run's wall time, the median, and the score and `execution_time` results.json holds;
4. a malformed upload (two notebooks), which never starts the student's code.

run_autograder uses this environment's Python (RLCOURSE_PYTHON), as the tests do; setup.sh's
own install is timed by tests/batch/test_gradescope_autograder.py.
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RLCOURSE = str(Path(sys.executable).with_name("rlcourse"))


def timed(command: list, **kwargs) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, capture_output=True, text=True, **kwargs)
    return time.perf_counter() - started


def upload(autograder: Path, files: dict) -> tuple[float, dict]:
    for folder in ("submission", "results"):
        shutil.rmtree(autograder / folder, ignore_errors=True)
        (autograder / folder).mkdir()
    for name, data in files.items():
        (autograder / "submission" / name).write_bytes(data)
    seconds = timed(["bwrap", "--dev-bind", "/", "/", "--bind", str(autograder), "/autograder",
                     "--chdir", "/autograder", "--setenv", "RLCOURSE_PYTHON", sys.executable,
                     "/autograder/run_autograder"], timeout=1800)
    return seconds, json.loads((autograder / "results" / "results.json").read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--assignment", default="ps1")
    parser.add_argument("--student", default="alan", help="demo student whose notebook is uploaded")
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    notebook = (ROOT / "demo" / "submitted" / options.student / options.assignment /
                f"{options.assignment}.ipynb").read_bytes()

    with tempfile.TemporaryDirectory(prefix="rlcourse-gradescope-") as folder:
        folder = Path(folder)
        seconds = timed([RLCOURSE, "gradescope", options.assignment, "--out", str(folder)], cwd=ROOT)
        zip_path = folder / "autograder.zip"
        with zipfile.ZipFile(zip_path) as archive:
            entries = archive.infolist()
            archive.extractall(folder / "autograder" / "source")
        unpacked = sum(entry.file_size for entry in entries)
        print(f"autograder.zip: {zip_path.stat().st_size / 1024:.0f} KB, {len(entries)} files "
              f"({unpacked / 1024:.0f} KB unpacked), built in {seconds:.1f} s")

        autograder = folder / "autograder"
        for entry in entries:
            (autograder / "source" / entry.filename).chmod((entry.external_attr >> 16) & 0o777)
        shutil.copy2(autograder / "source" / "run_autograder", autograder / "run_autograder")
        (autograder / "submission_metadata.json").write_text(json.dumps(
            {"created_at": "2026-12-01T10:00:00-08:00",
             "assignment": {"due_date": "2026-12-10T23:00:00-08:00", "late_due_date": None}}))
        seconds = timed([sys.executable, "-m", "rlcourse.batch.gradescope", "warm", options.assignment,
                         "--course", str(autograder / "source")], timeout=1800)
        print(f"compilation cache warmed (setup.sh's last step, once per image): {seconds:.1f} s")

        times = []
        for repeat in range(options.repeats):
            seconds, results = upload(autograder, {f"{options.assignment}.ipynb": notebook})
            times.append(seconds)
            extra = results.get("extra_data", {})
            print(f"upload {repeat + 1} ({options.student}): {seconds:.1f} s from run_autograder to "
                  f"results.json; score {results['score']}/{extra.get('max_score')}, execution_time "
                  f"{results.get('execution_time')} s, isolation {extra.get('isolation')}")
        print(f"one upload, median of {len(times)}: {statistics.median(times):.1f} s "
              f"(min {min(times):.1f}, max {max(times):.1f})")
        seconds, results = upload(autograder, {"a.ipynb": notebook, "b.ipynb": notebook})
        print(f"a malformed upload (two notebooks): {seconds:.1f} s, score {results['score']}")


if __name__ == "__main__":
    main()
