"""How long `rlcourse similarity` takes on a class of 2,000 (the issue asks for under a minute).

Synthesises the class in a temporary nbgrader course directory: each student hands in one of
the bank's notebooks (every entry that is a notebook) with a few identifiers renamed at random
in each answer cell, so no two submissions are byte-identical. Then it times what the command
does: reading and fingerprinting every submission, scoring all pairs, writing the page, and
writing --json (to /dev/null). Nothing is committed; the folder is deleted afterwards.

    .venv/bin/python benchmarks/similarity.py [--students 2000] [--assignment ps1]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import sys
import tempfile
import time
from pathlib import Path

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.bank import build_submission, load_entries, reference_student
from rlcourse.course.directory import Course
from rlcourse.report.similarity import compare_class, render_page, score_pairs, write_json

WORD = re.compile(r"\b[a-z_][a-z0-9_]{2,}\b")
KEEP = {"def", "return", "for", "while", "if", "else", "elif", "and", "not", "lambda", "import",
        "from", "range", "jnp", "jax", "torch", "np", "None", "True", "False", "axis", "self"}


def renamed(source: str, rng: random.Random) -> str:
    words = sorted(set(WORD.findall(source)) - KEEP)
    for word in rng.sample(words, min(2, len(words))):
        source = re.sub(rf"\b{word}\b", f"{word}_{rng.randrange(1000)}", source)
    return source


def synthesise(course: Course, assignment, root: Path, students: int, seed: int) -> None:
    base = reference_student(assignment.source_notebook, assignment.release_notebook)
    notebooks = []
    for entry in load_entries(course.root / "tests" / "bank" / assignment.name):
        if entry.raw is None:
            notebooks.append(json.loads(build_submission(entry, base)))
    rng = random.Random(seed)
    for number in range(students):
        notebook = json.loads(json.dumps(rng.choice(notebooks)))
        for cell in notebook["cells"]:
            if cell["metadata"].get("nbgrader", {}).get("solution"):
                cell["source"] = renamed("".join(cell["source"]), rng)
        path = root / "submitted" / f"student{number:04d}" / assignment.name / assignment.notebook
        path.parent.mkdir(parents=True)
        path.write_text(json.dumps(notebook))


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (the fingerprinting processes): on
    a machine shared with other work, the wall time alone says little."""
    usage = [resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    return sum(one.ru_utime + one.ru_stime for one in usage)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=2000)
    parser.add_argument("--assignment", default="ps1")
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args(argv)
    course = Course.find()
    assignment = course.assignment(options.assignment)
    with tempfile.TemporaryDirectory(prefix="rlcourse-similarity-") as folder:
        root = Path(folder)
        started = time.perf_counter()
        synthesise(course, assignment, root, options.students, options.seed)
        print(f"synthesised {options.students} submissions of {assignment.name} in "
              f"{time.perf_counter() - started:.1f} s", file=sys.stderr)
        class_dir = ClassDirectory(root)
        cpu_before = cpu_seconds()
        started = time.perf_counter()
        comparison = compare_class(assignment, class_dir)
        scored = time.perf_counter()
        page = render_page(comparison)
        (root / "similarity.html").write_text(page)
        paged = time.perf_counter()
        with open(os.devnull, "w") as sink:
            write_json(comparison, sink)
        done = time.perf_counter()
        cpu = cpu_seconds() - cpu_before
        score_pairs(comparison.fingerprints)
        scoring = time.perf_counter() - done
    pairs = len(comparison.scores)
    print(f"{len(comparison.students)} submissions, {pairs} pairs, {comparison.flagged} flagged: "
          f"read+fingerprint+score {scored - started:.1f} s, page {paged - scored:.1f} s "
          f"({len(page) / 1e6:.1f} MB), --json {done - paged:.1f} s; "
          f"total {done - started:.1f} s on {os.cpu_count()} cores "
          f"({cpu:.1f} s of CPU; load average {os.getloadavg()[0]:.1f}); "
          f"scoring every pair alone, again: {scoring:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
