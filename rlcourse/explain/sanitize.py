"""A student's markdown as staff may read it: no markup of theirs can run in a TA's browser.

formgrader draws the autograded notebook's markdown cells with nbconvert's `markdown2html` and
nothing else (its `formgrade` template skips `HTMLExporter.sanitize_html`), on a page of the TA's
Jupyter server whose Content-Security-Policy allows inline scripts: a written answer such as
`<img src=x onerror="fetch('/api/contents/...', {method: 'PUT', ...})">` ran with the TA's
`_xsrf` and could write the course or start a kernel (issue 29, finding 1). So every markdown or
raw cell of a student's reaches the autograded notebook through two steps:

1. **bleach**, through nbconvert's own `SanitizeHTML` preprocessor (the sanitiser nbviewer
   uses), escapes every HTML tag the student typed but a few harmless ones with no attribute
   but a link's http/https/mailto `href`: `<img onerror=...>` is then shown, as text, to the TA.
2. **Drawn and checked**: the result is drawn by the very renderer formgrader uses (nbconvert's
   `MarkdownWithMath` with `IPythonRenderer`, the cell's own attachments) and every element and
   attribute of that HTML is checked against what plain markdown makes (`SAFE_TAGS`,
   `SAFE_ATTRIBUTES`), every link against `LINK_SCHEMES` and every image against the cell's own
   raster attachments. Markdown makes markup of its own that no HTML sanitiser sees in the
   source (`[x](javascript:...)`, `java&#x73;cript:`, a reference definition, an autolink, a
   missing `attachment:` that makes nbconvert raise and formgrader fail): a cell whose drawing
   is not entirely safe is shown as its text instead, in a fenced block (escaped by the
   renderer), under a line saying so.

A cell's attachments are kept only as PNG, JPEG or GIF (an SVG or an HTML "attachment" is
dropped): the only images a student's answer may show.
"""
from __future__ import annotations

import html.parser
import re

SAFE_TAGS = frozenset({
    "p", "br", "hr", "em", "strong", "del", "s", "code", "pre", "blockquote", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "a", "img", "table", "thead", "tbody", "tr", "th", "td",
    "span", "div", "sub", "sup", "dl", "dt", "dd", "abbr", "input"})
"""What nbconvert's markdown renderer makes of plain markdown (code blocks are Pygments' divs
and spans, task lists disabled checkboxes), and the tags bleach lets through."""
SAFE_ATTRIBUTES = {
    "a": {"href", "title", "class"}, "img": {"src", "alt", "title"}, "ol": {"start"},
    "input": {"type", "checked", "disabled", "class"}, "abbr": {"title"},
    **{f"h{level}": {"id"} for level in range(1, 7)},
}
"""Attributes allowed per tag; every tag may also have `class` (Pygments, math, task lists) and
an `align` or a `style` that only aligns a table cell."""
LINK_SCHEMES = ("http://", "https://", "mailto:")
"""What a link may lead to; an in-page `#anchor` too (the heading links nbconvert adds)."""
ATTACHMENT_TYPES = ("image/png", "image/jpeg", "image/gif")
BLEACH_TAGS = ["a", "abbr", "b", "blockquote", "br", "code", "del", "em", "i", "li", "ol", "p",
               "pre", "s", "strong", "sub", "sup", "ul"]
"""What a student may type as HTML and see drawn; every other tag is shown as text."""
BLEACH_ATTRIBUTES = {"a": ["href", "title"], "abbr": ["title"]}
SHOWN_AS_TEXT = ("*rlcourse: this answer is shown as text: drawn as markdown, it would hold a "
                 "link, an image or markup that is not safe to open.*")
_ALIGN = re.compile(r"text-align\s*:\s*(left|right|center)\s*;?", re.IGNORECASE)
_RASTER_DATA = re.compile(r"data:image/(png|jpeg|gif);base64,[A-Za-z0-9+/=\s]*")


def escape_html(source: str) -> str:
    """`source` with every HTML tag but BLEACH_TAGS (and their attributes but a link's
    http/https/mailto href) escaped: nbconvert's SanitizeHTML, which is bleach."""
    from nbconvert.preprocessors.sanitize import SanitizeHTML

    if "<" not in source:  # no tag to escape: leave the text exactly as written
        return source
    return SanitizeHTML(tags=BLEACH_TAGS, attributes=BLEACH_ATTRIBUTES, strip=False,
                        strip_comments=True).sanitize_html_tags(source)


def safe_attachments(attachments) -> dict:
    """The cell's attachments as PNG, JPEG or GIF only (each bundle keeps those types; a
    bundle with none is dropped)."""
    kept = {}
    for name, bundle in (attachments or {}).items():
        if isinstance(name, str) and isinstance(bundle, dict):
            images = {kind: data for kind, data in bundle.items()
                      if kind in ATTACHMENT_TYPES and isinstance(data, str)}
            if images:
                kept[name] = images
    return kept


def drawn(source: str, attachments: dict) -> str:
    """`source` as formgrader's renderer draws it (nbconvert's markdown2html); raises what
    nbconvert raises (a missing attachment: InvalidNotebook)."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    return MarkdownWithMath(renderer=IPythonRenderer(escape=False, attachments=attachments)).render(source)


def unsafe_markup(html_text: str) -> list[str]:
    """What in `html_text` is not plain markdown's markup: tags, attributes, links and images
    outside the allowlists, described one per entry (empty: safe to show)."""
    found = []

    class Checker(html.parser.HTMLParser):
        def handle_starttag(self, tag, attrs):
            if tag not in SAFE_TAGS:
                found.append(f"<{tag}>")
                return
            for name, value in attrs:
                value = value or ""
                if name == "class" or (name in ("align",) and tag in ("th", "td")):
                    continue
                if name == "style" and tag in ("th", "td") and _ALIGN.fullmatch(value.strip()):
                    continue
                if name not in SAFE_ATTRIBUTES.get(tag, ()):
                    found.append(f"<{tag} {name}>")
                elif name == "href" and not (value.startswith("#") or value.lower().startswith(LINK_SCHEMES)):
                    found.append(f"link to {value[:40]!r}")
                elif name == "src" and not _RASTER_DATA.fullmatch(value):
                    found.append(f"image from {value[:40]!r}")
                elif name == "type" and value != "checkbox":
                    found.append(f"<input type={value[:20]!r}>")

        handle_startendtag = handle_starttag

        def handle_comment(self, data):
            found.append("an HTML comment")

        def handle_pi(self, data):
            found.append("a processing instruction")

        def unknown_decl(self, data):
            found.append("a declaration")

    checker = Checker(convert_charrefs=True)
    checker.feed(html_text)
    checker.close()
    return found


def as_text(source: str) -> str:
    """`source` in a fenced code block longer than any backtick run in it, under SHOWN_AS_TEXT:
    the renderer escapes a code block's every character."""
    longest = max((len(run) for run in re.findall(r"`+|~+", source)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{SHOWN_AS_TEXT}\n\n{fence}text\n{source}\n{fence}\n"


def staff_markdown(source: str, attachments) -> tuple[str, dict]:
    """(source, attachments) of a student's markdown cell as the autograded notebook keeps it:
    bleach-escaped markdown whose drawing holds only plain markdown's markup, else its text."""
    kept = safe_attachments(attachments)
    escaped = escape_html(source)
    try:
        problems = unsafe_markup(drawn(escaped, kept))
    except Exception:  # noqa: BLE001 - anything nbconvert cannot draw would fail formgrader's page too
        problems = ["not drawable"]
    if not problems:
        return escaped, kept
    return as_text(source), {}
