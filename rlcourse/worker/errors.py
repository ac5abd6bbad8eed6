"""The worker's public error: what graders may catch when a call into a submission fails.

Graders (graders/<assignment>/) import it from here, never from the launchers: a grader
needs to know that a call failed and why, not how workers are started."""
from __future__ import annotations


class WorkerError(Exception):
    """A request that did not produce an answer; `kind` says why, for diagnosis."""

    def __init__(self, kind: str, message: str, *, where: str = ""):
        super().__init__(message)
        self.kind = kind
        self.where = where
