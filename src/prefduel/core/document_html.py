"""The HTML writer of `prefduel.core.document`: one Jinja2 template and one stylesheet.

Every report page of the package is this template over a `Document`: a self-contained file
(inline CSS and SVG, no scripts fetched). Text is autoescaped; only `Figure.svg` and
`Raw.html` (markup the package built itself) are inserted as they are.
"""

from __future__ import annotations

import html
from functools import cache
from importlib import resources
from typing import Any

import jinja2
import markupsafe

from prefduel.core.document import (
    Block,
    Document,
    Figure,
    Items,
    Paragraph,
    Preformatted,
    Raw,
    Settings,
    Table,
    as_cell,
)

_KINDS: dict[type, str] = {
    Table: "table",
    Paragraph: "paragraph",
    Items: "items",
    Figure: "figure",
    Settings: "settings",
    Preformatted: "preformatted",
    Raw: "raw",
}


def _kind_of(block: Block) -> str:
    try:
        return _KINDS[type(block)]
    except KeyError:
        raise TypeError(f"not a document block: {type(block).__name__}") from None


@cache
def stylesheet() -> str:
    """The one stylesheet of every report page."""
    return resources.files("prefduel.core").joinpath("templates/document.css").read_text("utf-8")


def _stdlib_escaped(value: Any) -> Any:
    """Plain text escaped by `html.escape` (quotes as ``&#x27;``, ``&quot;``), so a page's text
    reads exactly as ``html.escape`` would write it; markup and non-text values are left to
    autoescaping."""
    if isinstance(value, str) and not isinstance(value, markupsafe.Markup):
        return markupsafe.Markup(html.escape(value))
    return value


@cache
def _template() -> jinja2.Template:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("prefduel.core", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        finalize=_stdlib_escaped,
    )
    env.globals.update(as_cell=as_cell, kind_of=_kind_of)
    return env.get_template("document.html.j2")


def to_html(document: Document) -> str:
    """The document as one self-contained HTML page (text escaped as `html.escape` does)."""
    return _template().render(doc=document, css=stylesheet())


__all__ = ["stylesheet", "to_html"]
