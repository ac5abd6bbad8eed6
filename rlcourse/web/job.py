"""One web submission graded in its own process: `python -m rlcourse.web.job ASSIGNMENT STUDENT ROOT`.

The service never grades in its own process: this child runs the batch's `autograde` for one
student (the hidden graders here, the student's code in the sandboxed workers it starts; the
ledger, the gradebook with the late penalty, the autograded notebook and the feedback page, as
for a class), then prints one JSON line with the report and the timing. If it is killed, nothing
half-written is kept (autograde's own guarantee) and the service grades the submission again.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    from rlcourse.batch.autograde import autograde
    from rlcourse.course.class_directory import ClassDirectory
    from rlcourse.course.directory import Course

    name, student, root = argv
    assignment = Course.find().assignment(name)
    outcomes = autograde(assignment, class_dir=ClassDirectory(Path(root)), students=[student],
                         workers=1, progress=False)
    if not outcomes or outcomes[0].status in ("not graded", "refused"):
        errors = outcomes[0].report.errors if outcomes else ["no submission found"]
        print(json.dumps({"graded": False, "error": "; ".join(errors)}))
        return 1
    outcome = outcomes[0]
    print(json.dumps({"graded": True, "status": outcome.status, "report": outcome.report.to_json(),
                      "timing": outcome.timing.to_json() if outcome.timing else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
