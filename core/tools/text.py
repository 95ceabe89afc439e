"""Plain text out of corpus files, and the passages a long document is indexed in.

Pure functions with no I/O, apart from the corpus so they can be tested on their own: an HTML
page's readable text and title, a Markdown file's title, and the cut of a text into passages
that end at whitespace where they can.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

PASSAGE_CHARS = 64 * 1024
_PASSAGE_LOOKBACK = 1024  # how far back from a passage's end to look for whitespace to cut at
_MD_TITLE_RE = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.MULTILINE)


_SKIP_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "math"})
# What HTML5 allows in <head>; any other start tag (or text) ends the head implicitly, as a browser
# does: "</head>" is optional, and a page without it once lost all its body text.
_HEAD_TAGS = frozenset({"base", "link", "meta", "noscript", "script", "style", "template", "title"})
_BLOCK_TAGS = frozenset(
    {
        "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "fieldset",
        "figcaption", "figure", "footer", "form", "h1", "h2", "h3", "h4", "h5", "h6", "header",
        "hr", "li", "main", "nav", "ol", "p", "pre", "section", "table", "tr", "td", "th", "ul",
    }
)  # fmt: skip


class _HtmlText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title_parts: list[str] = []
        self.h1_parts: list[str] = []
        self._skip_depth = 0
        self._in_head = False
        self._in_title = False
        self._title_done = False
        self._in_h1 = False
        self._h1_done = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "head":
            self._in_head = True
            return
        if self._in_head and tag not in _HEAD_TAGS:
            self._in_head = False
        if tag == "title" and not self._skip_depth and not self._title_done:
            self._in_title = True  # the document's title: an inline SVG's <title> is not the page's
        elif tag in _SKIP_TAGS:
            self._skip_depth += 1
        if tag == "h1" and not self._h1_done:
            self._in_h1 = True
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag == "head":
            self._in_head = False
        if tag == "title" and self._in_title:
            self._in_title = False
            self._title_done = True
        elif tag in _SKIP_TAGS and self._skip_depth:
            self._skip_depth -= 1
        if tag == "h1" and self._in_h1:
            self._in_h1 = False
            self._h1_done = True
        if tag in _BLOCK_TAGS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title_parts.append(data)
            return
        if self._skip_depth:
            return
        if self._in_head:
            if not data.strip():
                return
            self._in_head = False  # text cannot sit in <head>: the body has begun
        if self._in_h1:
            self.h1_parts.append(data)
        self.parts.append(data)


def html_to_text(html: str) -> tuple[str, str | None]:
    """Return (plain text, title) for an HTML document; title from ``<title>`` else the first ``<h1>``."""
    parser = _HtmlText()
    parser.feed(html)
    parser.close()
    lines = [" ".join(line.split()) for line in "".join(parser.parts).splitlines()]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    title = " ".join("".join(parser.title_parts).split()) or " ".join("".join(parser.h1_parts).split())
    return text, title or None


def markdown_title(text: str) -> str | None:
    match = _MD_TITLE_RE.search(text)
    return match.group(1).strip() if match else None


def split_passages(text: str, size: int = PASSAGE_CHARS) -> list[tuple[int, str]]:
    """Cut text into (offset, passage) pieces of at most ``size`` characters that join back exactly.

    Cuts fall just after whitespace when there is some near the end, so a word is not split in two
    (half a word would be unsearchable); a run without whitespace is cut hard at ``size``.
    An empty text is one empty passage, so the document still has a row for its title.
    """
    if size < 1:
        raise ValueError(f"passage size must be at least 1, got {size}")
    passages: list[tuple[int, str]] = []
    start, total = 0, len(text)
    while True:
        end = min(start + size, total)
        if end < total:
            floor = max(start + 1, end - _PASSAGE_LOOKBACK)
            for cut in range(end, floor - 1, -1):
                if text[cut - 1].isspace():
                    end = cut
                    break
        passages.append((start, text[start:end]))
        if end >= total:
            return passages
        start = end
