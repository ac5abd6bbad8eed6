"""After a batch: the TA's class report, the rubric sheet of the answers marked by hand and the
freshest marking CSV beside it (rlcourse.report.rubric_sheet: a CSV a TA may have edited is never
overwritten), from the grade of record (the gradebook, with the ledger's reports; no regrading)."""
from __future__ import annotations

from pathlib import Path

from rlcourse.course.class_directory import ClassDirectory
from rlcourse.course.directory import Assignment


def write_class_outputs(assignment: Assignment, class_dir: ClassDirectory) -> dict[str, Path]:
    from rlcourse.course.diagnoses import load_diagnoses
    from rlcourse.record.grades import class_grades
    from rlcourse.report.class_report import write_class_report
    from rlcourse.report.rubric_sheet import write_marking_sheet

    grades = class_grades(class_dir, assignment)
    if not grades:
        return {}
    written = write_class_report(class_dir.reports / assignment.name, assignment=assignment.name,
                                 grades=grades, diagnoses=load_diagnoses(assignment.grader_dir))
    outputs = {"TA report": written.get("summary.html", class_dir.reports / assignment.name)}
    sheet = write_marking_sheet(assignment, class_dir)
    if sheet is not None:
        outputs["rubric sheet"] = sheet.html
        outputs["rubric CSV to fill"] = sheet.csv
    return {**outputs, "gradebook": Path(class_dir.db_url.removeprefix("sqlite:///")),
            "feedback": class_dir.feedback, "autograded": class_dir.autograded}
