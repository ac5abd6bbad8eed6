"""HTML pages for people, from Jinja2 templates in rlcourse/templates/.

Every value a template prints is HTML-escaped by Jinja2 (autoescaping is on for every template),
after `printable` has dropped what HTML cannot carry, so a student's id, code or exception
message can never become markup. The one style sheet (templates/pages.css) is inlined into each
page, so a page stays a single file a student or TA can open anywhere; pages also carry a
Content-Security-Policy that forbids scripts and any resource but inline styles and data-URI
images, so even a template mistake could not run code or fetch anything.
"""
from __future__ import annotations

import functools
import re

from markupsafe import Markup

CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def printable(value):
    """Any value as text HTML can carry: NUL and other control characters become U+FFFD and lone
    surrogates (a notebook's JSON may contain them) a backslash escape, so the page always
    encodes as UTF-8. Markup the templates mark safe themselves is left as it is."""
    if isinstance(value, Markup):
        return value
    text = "" if value is None else str(value)
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return _CONTROL.sub("\ufffd", text)


def points(value: float) -> str:
    """Points as people write them: 2, 0.5, 1.33."""
    value = float(value)
    return f"{value:g}" if value == round(value, 6) else f"{value:.2f}"


@functools.cache
def environment():
    from jinja2 import Environment, PackageLoader, StrictUndefined

    env = Environment(loader=PackageLoader("rlcourse", "templates"), autoescape=True,
                      finalize=printable, undefined=StrictUndefined,
                      trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters["points"] = points
    env.globals["csp"] = Markup(CSP)  # ours, quoted with single quotes as CSP writes them
    return env


def render(template: str, **context) -> str:
    """The page `template` with `context`, the style sheet inlined."""
    env = environment()
    style = Markup(env.loader.get_source(env, "pages.css")[0])
    return env.get_template(template).render(style=style, **context)
