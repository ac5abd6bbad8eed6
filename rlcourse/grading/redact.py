"""Keeping hidden text out of everything a student may read.

Reports are built from messages the graders write and from what the student's process says about
itself (exception messages, cell errors). Should a submission manage to read a hidden file (a
grader, the oracle, the instructor's notebook) and smuggle its text out through an exception
message, this removes every distinctive line of those files from report text before it is saved,
shown or written to the gradebook's neighbours. Under the bubblewrap sandbox those files are not
even visible to the student; this is the second line of defence, and the only one under the
resource-limits fallback.
"""
from __future__ import annotations

from rlcourse.course.release import Release, Source

MIN_LINE_CHARS = 16
REPLACEMENT = "[hidden]"


class Redactor:
    def __init__(self, lines):
        # Longest first, so a line that contains a shorter one is removed whole.
        self._lines = sorted({line for line in lines if len(line) >= MIN_LINE_CHARS}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        if not text:
            return text
        for line in self._lines:
            if line in text:
                text = text.replace(line, REPLACEMENT)
        return text

    @classmethod
    def for_assignment(cls, assignment, release: Release | None = None) -> "Redactor":
        """Lines of the hidden graders, of solutions/<assignment>/, and of the source notebook's
        solution regions (the given code, which students have anyway, is left out; `release`,
        if the caller has read it, saves reading it again)."""
        root = assignment.course.root
        lines = set()
        for folder in (assignment.grader_dir, root / "solutions" / assignment.name):
            for path in sorted(folder.rglob("*")):
                if path.suffix in (".py", ".toml", ".json") and path.is_file():
                    lines |= _distinctive(path.read_text(errors="replace"))
        if assignment.source_notebook.is_file():
            for region in Source.read(assignment.source_notebook).regions:
                lines |= _distinctive(region)
        return cls(lines - _released_lines(release or Release.read_or_empty(assignment.release_notebook)))


def _distinctive(text: str) -> set[str]:
    return {line.strip() for line in text.splitlines() if len(line.strip()) >= MIN_LINE_CHARS}


def _released_lines(release: Release) -> set[str]:
    """Lines students already have in the release: quoting them hides nothing."""
    return _distinctive("\n".join(release.lines))
