"""Per-student variants: each student's own values of an assignment's parameters.

With one release and exact graders, a copied notebook earns what the original earned. An
assignment may instead declare parameters (`[variants]` in its `assignment.toml`), and every
student works with values derived from their student id: a notebook copied from a classmate then
carries the classmate's values, and answers computed for them are wrong for the copier.

The derivation is public on purpose. The released notebook must show each student their own
values without the staff handing out a file per student, so the locked parameter cell
(`parameter_cell`) carries the same derivation as this module: HMAC-SHA256 keyed with the
course's *public* salt over (assignment, student id, parameter name), reduced to an index into
the parameter's allowed values. Anyone who reads the notebook can compute anyone's values; that
is fine for what variants are for: a copied submission still carries someone else's values, and
the similarity report flags it (rlcourse.report.similarity). They are not a secret exam.

    [variants]
    enabled = true                   # optional; false grades everyone with the defaults
    salt = "a string of the course's"
    [variants.parameters]
    clip = { values = [0.1, 0.2, 0.3], default = 0.2 }
    seed = { range = [1, 99], default = 11 }        # whole numbers, both ends included
"""
from __future__ import annotations

import hashlib
import hmac
import json

import attrs

PARAMETER_CELL = "given_parameters"
"""grade_id of the released notebook's locked cell that defines PARAMS."""
PRINTED = "Your parameters"
"""How the parameter cell's printed line starts; the similarity report reads it back."""
KEYS = {"enabled": "true or false", "salt": "a non-empty string", "parameters": "a table"}
PARAMETER_KEYS = {"values": "a list of numbers", "range": "[low, high], two whole numbers",
                  "default": "one of the allowed values"}
PARAMETER_MEANINGS = {"values": "the allowed values, in order: the student's id picks one",
                      "range": "instead of values: every whole number from low to high, both included",
                      "default": "the value of a notebook graded without a student id, and of "
                                 "every figure the notebook states"}
"""What each key of a parameter's entry means (the documentation's reference is drawn from it)."""


class VariantsError(ValueError):
    """`[variants]` is malformed; config.py turns it into a CourseError."""


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


@attrs.frozen
class Parameter:
    name: str
    choices: tuple
    """The allowed values, in order: the derived index picks one."""
    default: int | float
    low_high: tuple[int, int] | None = None
    """(low, high) when declared as a range: the notebook then shows `range(low, high + 1)`."""

    def expression(self) -> str:
        """The allowed values as Python source for the parameter cell."""
        if self.low_high is not None:
            return f"range({self.low_high[0]}, {self.low_high[1] + 1})"
        return repr(list(self.choices))


@attrs.frozen
class Variants:
    enabled: bool = False
    """Whether students get their own values (true when the table is there and does not say
    false); off, everyone is graded with the defaults."""
    salt: str = ""
    """The course's public key to the derivation: changing it changes every student's values."""
    parameters: tuple[Parameter, ...] = ()
    """`[variants.parameters]`: each parameter's allowed values and default, by name."""

    @classmethod
    def from_table(cls, table, *, where: str) -> "Variants":
        if table is None:
            return cls()
        if not isinstance(table, dict):
            raise VariantsError(f"{where}: variants must be a table ([variants])")
        unknown = sorted(set(table) - set(KEYS))
        if unknown:
            raise VariantsError(f"{where}: unknown key {', '.join(map(repr, unknown))} "
                                f"(allowed: {', '.join(KEYS)})")
        enabled = table.get("enabled", True)
        if not isinstance(enabled, bool):
            raise VariantsError(f"{where}: enabled = {enabled!r}; it must be {KEYS['enabled']}")
        salt = table.get("salt")
        if not isinstance(salt, str) or not salt:
            raise VariantsError(f"{where}: salt = {salt!r}; it must be {KEYS['salt']}")
        parameters = table.get("parameters", {})
        if not isinstance(parameters, dict) or not parameters:
            raise VariantsError(f"{where}: parameters must be a table with at least one parameter "
                                "([variants.parameters])")
        return cls(enabled=enabled, salt=salt,
                   parameters=tuple(_parameter(name, spec, where=f"{where} parameters.{name}")
                                    for name, spec in parameters.items()))

    @property
    def defaults(self) -> dict:
        return {parameter.name: parameter.default for parameter in self.parameters}

    def for_student(self, assignment: str, student: str | None) -> dict:
        """The student's own values; the defaults when variants are off or the id is unknown."""
        if not self.enabled or not student:
            return self.defaults
        return {parameter.name: parameter.choices[_index(self.salt, assignment, student, parameter.name,
                                                         len(parameter.choices))]
                for parameter in self.parameters}


STUDENT_VARIABLES = ("JUPYTERHUB_USER", "RLCOURSE_STUDENT")
"""Where the released parameter cell finds the student id, in this order; `rlcourse grade`
looks in the same places when it is not told whose notebook it grades."""


def student_from_environment(environ=None) -> tuple[str, str] | None:
    """(student id, the variable it came from), as the released notebook finds it, or None."""
    import os

    environ = os.environ if environ is None else environ
    for variable in STUDENT_VARIABLES:
        if environ.get(variable):
            return environ[variable], variable
    return None


def defaults_note(variants: Variants) -> str:
    """What a report says when it was graded without a student id while variants are on: the
    items that read a parameter were judged against the defaults, which are not the student's
    own values (a notebook that typed its own numbers instead of PARAMS loses them)."""
    return (f"graded with the default parameters {variants.defaults}, not a student's own: no "
            "student id was known when grading (rlcourse grade --student ID grades as that student)")


def _parameter(name: str, spec, *, where: str) -> Parameter:
    if not name.isidentifier():
        raise VariantsError(f"{where}: {name!r} is not a Python name")
    if not isinstance(spec, dict):
        raise VariantsError(f"{where}: must be a table {{ values = [...], default = ... }}")
    unknown = sorted(set(spec) - set(PARAMETER_KEYS))
    if unknown:
        raise VariantsError(f"{where}: unknown key {', '.join(map(repr, unknown))} "
                            f"(allowed: {', '.join(PARAMETER_KEYS)})")
    if ("values" in spec) == ("range" in spec):
        raise VariantsError(f"{where}: give exactly one of values ({PARAMETER_KEYS['values']}) "
                            f"or range ({PARAMETER_KEYS['range']})")
    low_high = None
    if "values" in spec:
        values = spec["values"]
        if not (isinstance(values, list) and values and all(map(_number, values))
                and len(set(values)) == len(values)):
            raise VariantsError(f"{where}: values = {values!r}; it must be a non-empty list of "
                                "distinct numbers")
        choices = tuple(values)
    else:
        bounds = spec["range"]
        if not (isinstance(bounds, list) and len(bounds) == 2
                and all(isinstance(end, int) and not isinstance(end, bool) for end in bounds)
                and bounds[0] <= bounds[1]):
            raise VariantsError(f"{where}: range = {bounds!r}; it must be {PARAMETER_KEYS['range']} "
                                "with low <= high")
        low_high = (bounds[0], bounds[1])
        choices = tuple(range(bounds[0], bounds[1] + 1))
    if "default" not in spec:
        raise VariantsError(f"{where}: default is missing; it must be {PARAMETER_KEYS['default']}")
    default = spec["default"]
    if not _number(default) or default not in choices:
        raise VariantsError(f"{where}: default = {default!r}; it must be one of the allowed values")
    return Parameter(name, choices, default, low_high)


def _index(salt: str, assignment: str, student: str, name: str, count: int) -> int:
    message = f"{assignment}\0{student}\0{name}".encode()
    digest = hmac.new(salt.encode(), message, hashlib.sha256).digest()
    return int.from_bytes(digest[:8], "big") % count


def parameter_cell(assignment: str, variants: Variants, *, student: str | None = None) -> str:
    """The locked cell that defines PARAMS, as released (`student` None: the id comes from the
    environment) or as graded (`student` given: that id, whatever the environment says). It
    computes exactly what `Variants.for_student` computes (a test checks it for many ids)."""
    if student is None:
        who = ('os.environ.get("JUPYTERHUB_USER") or os.environ.get("RLCOURSE_STUDENT") or ""')
    else:
        who = repr(student)
    choices = ",\n           ".join(f"{json.dumps(p.name)}: {p.expression()}" for p in variants.parameters)
    defaults = json.dumps(variants.defaults)
    return f'''# Your own parameters (given; do not edit). They come from your student id, so your
# classmates work with other values: use PARAMS["..."] in your code, never the printed numbers.
# Your student id: on the course's JupyterHub, your hub user name (nothing to set); anywhere
# else, the id the course gave you, the one you submit under. Start Jupyter with it, for
# instance `RLCOURSE_STUDENT=<that id> jupyter lab`, and check the id this cell prints.
import hashlib
import hmac
import os

STUDENT = {who}
VARIANTS_ON = {variants.enabled!r}
SALT = {json.dumps(variants.salt)}
CHOICES = {{{choices}}}
DEFAULTS = {defaults}


def _own_value(name, allowed):
    message = "{assignment}\\0" + STUDENT + "\\0" + name
    digest = hmac.new(SALT.encode(), message.encode(), hashlib.sha256).digest()
    return allowed[int.from_bytes(digest[:8], "big") % len(allowed)]


if VARIANTS_ON and STUDENT:
    PARAMS = {{name: _own_value(name, allowed) for name, allowed in CHOICES.items()}}
else:
    PARAMS = dict(DEFAULTS)
    print("No student id found (JUPYTERHUB_USER, RLCOURSE_STUDENT): these are the default values, "
          "not yours. Start Jupyter with RLCOURSE_STUDENT set to the id the course gave you.")
print("{PRINTED} (student " + repr(STUDENT) + "):", PARAMS)
'''


def printed_parameters(text: str) -> tuple[str, dict] | None:
    """(student id, values) from the parameter cell's printed line, or None if absent."""
    import ast

    for line in text.splitlines():
        if line.startswith(PRINTED + " (student "):
            head, _, values = line.partition("):")
            try:
                return (ast.literal_eval(head.removeprefix(PRINTED + " (student ")),
                        ast.literal_eval(values.strip()))
            except (ValueError, SyntaxError):
                return None
    return None


def shown_parameters(path) -> tuple[str, dict] | None:
    """(student id, values) the submitted notebook's parameter cell printed when its author last
    ran it, read from its saved outputs without running anything; None if it shows none."""
    import nbformat

    try:
        notebook = nbformat.read(str(path), as_version=4)
    except Exception:  # noqa: BLE001 - an unreadable notebook shows nothing
        return None
    for cell in notebook.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") != PARAMETER_CELL:
            continue
        text = "".join(output.get("text", "") for output in cell.get("outputs", [])
                       if output.get("output_type") == "stream")
        return printed_parameters(text)
    return None


def borrowed_parameters(assignment: str, variants: Variants, student: str, path) -> dict | None:
    """Evidence that `student`'s notebook was run with someone else's parameters: its parameter
    cell printed another student's id (or values that are not theirs) when it was last run,
    as in a notebook copied with its outputs. None when it shows their own, none, or the
    defaults of a run without any id (not someone else's)."""
    if not variants.enabled:
        return None
    shown = shown_parameters(path)
    if shown is None or not shown[0]:
        return None
    own = variants.for_student(assignment, student)
    if shown[0] == student and shown[1] == own:
        return None
    return {"student": student, "shown_for": shown[0], "shown": shown[1], "own": own}


def with_parameter_output(content: bytes, assignment: str, variants: Variants, ran_as: str) -> bytes:
    """A notebook's bytes as `ran_as` would leave them: its parameter cell holding the line that
    cell prints for that id (computed by running the cell's own code). For the demo class and
    tests; a file that is not a notebook is returned as it is."""
    import contextlib
    import io

    import nbformat

    try:
        notebook = nbformat.reads(content.decode("utf-8"), as_version=4)
    except Exception:  # noqa: BLE001 - an unreadable notebook stays unreadable
        return content
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(parameter_cell(assignment, variants, student=ran_as), {})  # noqa: S102 - the course's own cell
    for cell in notebook.cells:
        if cell.get("metadata", {}).get("nbgrader", {}).get("grade_id") == PARAMETER_CELL:
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed.getvalue())]
            cell.execution_count = 2
    return nbformat.writes(notebook).encode("utf-8") + b"\n"
