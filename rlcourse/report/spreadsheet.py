"""Every CSV rlcourse writes for people opens in a spreadsheet without running anything.

A spreadsheet runs a cell that starts with `=`, `+`, `-` or `@` as a formula (and a tab or a
carriage return may hide one), and a student id may start with `+`, `-` or `@`
(rlcourse.course.class_directory.SAFE_STUDENT_ID: `+A1+A1`, `-1-1`, `@A1` are ids), as a
comment or a title may with anything (issue 29, finding 10). `spreadsheet_text` puts a `'` before
such a text, which spreadsheets show as text and do not run (OWASP's advice on CSV injection);
a number, and a text that is only a number (`-0.5`), is left as it is: a spreadsheet reads it
as the number. `read_spreadsheet_text` takes that `'` off again when rlcourse reads its own
files back (`rlcourse rubric import`): a student id never holds a `'`, so the mark is unambiguous.

`csv_text` writes rows with every cell through `spreadsheet_text`: the scores, the exports, the
marking sheet and the service's download use it, so no text column can be forgotten.
"""
from __future__ import annotations

import csv
import io
import re

FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def spreadsheet_text(value):
    """`value` as a spreadsheet cell that runs nothing: a text starting with a formula's first
    character gets a leading `'`; numbers, and texts that are a plain number, are unchanged."""
    if not isinstance(value, str) or _NUMBER.fullmatch(value):
        return value
    return "'" + value if value.startswith(FORMULA_START) else value


def read_spreadsheet_text(text: str) -> str:
    """A cell of a CSV rlcourse wrote, as it was before `spreadsheet_text`: the `'` it put before
    a formula's first character taken off (and only that one)."""
    if text.startswith("'") and text[1:].startswith(FORMULA_START):
        return text[1:]
    return text


def csv_text(header, rows, *, lineterminator: str = "\r\n") -> str:
    """`header` and `rows` as CSV, every cell through `spreadsheet_text`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator=lineterminator)
    writer.writerow([spreadsheet_text(cell) for cell in header])
    for row in rows:
        writer.writerow([spreadsheet_text(cell) for cell in row])
    return buffer.getvalue()
