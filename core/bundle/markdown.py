"""An answer's Markdown as safe HTML for the audit report, rendered as the desk renders it.

The desk shows an answer with Qt's Markdown reader in its GitHub dialect with HTML switched off
(``MarkdownNoHTML``) in a viewer that never follows or fetches anything. The report is a page any
browser opens, so it must hold to the same rules without Qt: markdown-it-py with raw HTML off
(any tag in the answer is escaped and shown as text), GitHub's tables and strikethrough on, links
shown as their text with the address beside it but not clickable, and images as their description
and address, never fetched. Answers quote web pages and models, so nothing in them may act.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from markupsafe import Markup, escape

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token
    from markdown_it.utils import EnvType, OptionsDict

__all__ = ["markdown_html"]


def _link_open(
    _renderer: Any, tokens: Sequence[Token], idx: int, _options: OptionsDict, _env: EnvType
) -> str:
    """A link's text stays, its address goes into a title: nothing in the page can be followed."""
    href = str(tokens[idx].attrGet("href") or "")
    return f'<span class="link" title="{escape(href)}">'


def _link_close(
    _renderer: Any, tokens: Sequence[Token], idx: int, _options: OptionsDict, _env: EnvType
) -> str:
    opened = next((t for t in reversed(tokens[:idx]) if t.type == "link_open"), None)
    href = str(opened.attrGet("href") or "") if opened is not None else ""
    if not href or (opened is not None and opened.markup == "autolink"):  # its text is the address
        return "</span>"
    return f'</span> <span class="link-address">({escape(href)})</span>'


def _image(_renderer: Any, tokens: Sequence[Token], idx: int, _options: OptionsDict, _env: EnvType) -> str:
    """An image is its description and address as text: a report opened offline fetches nothing."""
    token = tokens[idx]
    alt = "".join(child.content for child in token.children or [])
    src = str(token.attrGet("src") or "")
    return f'<span class="image">[image: {escape(alt or "no description")}] ({escape(src)})</span>'


@functools.cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False})
    md.enable(["table", "strikethrough"])
    rules: dict[str, Any] = {"link_open": _link_open, "link_close": _link_close, "image": _image}
    for name, rule in rules.items():
        md.add_render_rule(name, rule)
    return md


def markdown_html(text: str | None) -> Markup:
    """``text`` rendered from Markdown to HTML that cannot run, fetch or navigate (see the module)."""
    if not text:
        return Markup("")
    return Markup(_parser().render(text))  # html off: every tag in text is escaped
