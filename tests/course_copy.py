"""A copy of one assignment of the course that a test may edit: its graders, release, source
and solutions, and the course's nbgrader_config.py (the files `rlcourse` reads as a course).

The copy also takes the assignment's compiled JAX programs, if this checkout's own grading has
made them: their keys do not depend on where the course lies, so the copy's reference run finds
them instead of compiling every program again (about 30 of the 60 s it took each copy). The
copy's `warmed-` record is not taken over: its fingerprint covers the location, so the copy still
runs and measures its reference itself."""
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def copy_course(target: Path, name: str = "ps1", *, cache: bool = False, toml_extra: str = "") -> Path:
    """`name`'s folders under `target` (bytecode caches left out) with its compiled programs;
    with `cache`, the course's whole `.rlcourse-cache` too; `toml_extra` appended to the copy's
    assignment.toml."""
    target = Path(target)
    target.mkdir(parents=True)
    shutil.copy(ROOT / "nbgrader_config.py", target)
    for folder in ("graders", "release", "source", "solutions"):
        shutil.copytree(ROOT / folder / name, target / folder / name,
                        ignore=shutil.ignore_patterns("__pycache__"))
    if cache and (ROOT / ".rlcourse-cache").is_dir():
        shutil.copytree(ROOT / ".rlcourse-cache", target / ".rlcourse-cache")
    else:
        for programs in (ROOT / ".rlcourse-cache").glob(f"jax-*/{name}"):
            shutil.copytree(programs, target / programs.relative_to(ROOT),
                            ignore=shutil.ignore_patterns("warmed-*", "*.lock"))
    if toml_extra:
        spec = target / "graders" / name / "assignment.toml"
        spec.write_text(spec.read_text() + "\n" + toml_extra)
    return target
