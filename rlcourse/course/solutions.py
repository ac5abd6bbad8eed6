"""Loading trusted course code (reference solutions, exact oracles, feedback figures) into the
grader process.

Files under `solutions/` are imported by path under a private module name, so graders can use
them without putting the course directory on `sys.path` (which would also expose it to anything
else imported here). Student code never runs in this process.
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def load_course_module(path: Path, name: str):
    """Import `path` once as module `name` (cached in sys.modules) and return it."""
    path = Path(path).resolve()
    module = sys.modules.get(name)
    if module is not None and Path(getattr(module, "__file__", "")).resolve() == path:
        return module
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def load_solution(course_root: Path, assignment: str, module: str):
    """solutions/<assignment>/<module>.py as module `rlcourse_course.<assignment>.<module>`."""
    return load_course_module(Path(course_root) / "solutions" / assignment / f"{module}.py",
                              f"rlcourse_course.{assignment}.{module}")


def assignment_feedback(assignment):
    """The assignment's optional `graders/<name>/feedback.py`, or None: it collects figure data
    from a student's code while grading, and draws the feedback page's figures from that data.
    Here, beside the other loaders, so that drawing a page needs neither pytest nor a worker."""
    path = assignment.grader_dir / "feedback.py"
    if not path.is_file():
        return None
    return load_course_module(path, f"rlcourse_graders.{assignment.name}.feedback")
