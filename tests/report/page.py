"""Read a rendered report back with the standard library's HTML parser (never with regexes).

:func:`parse` returns a :class:`Page`: every element with its attributes, its text, and the
text of the elements that carry an ``id``, so tests can ask structural questions ("which rows
does the table have", "what does memo 3 say") the way a browser would see the page.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

__all__ = ["Element", "Page", "parse"]

# Elements that never have an end tag.
_VOID = frozenset(
    {
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "source",
        "track",
        "wbr",
    }
)
# SVG elements written self-closing in the templates.
_SELF_CLOSING = frozenset({"rect", "line", "circle", "path", "polyline"})


@dataclass(eq=False)
class Element:
    """One element: tag, attributes (entities decoded), text inside it, and its children."""

    tag: str
    attrs: dict[str, str]
    parent: Element | None = field(default=None, repr=False)
    children: list[Element] = field(default_factory=list, repr=False)
    text_parts: list[str] = field(default_factory=list, repr=False)

    def __repr__(self) -> str:
        # Short on purpose: pytest prints reprs in assertion messages, and a page is big.
        return f"<{self.tag} {self.attrs!r}: {self.text[:80]!r}>"

    @property
    def text(self) -> str:
        """All text inside the element, whitespace collapsed."""
        return " ".join("".join(self.text_parts).split())

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def iter(self) -> list[Element]:
        """This element and all below it, in document order."""
        found = [self]
        for child in self.children:
            found.extend(child.iter())
        return found

    def find_all(
        self, tag: str | None = None, *, cls: str | None = None, **attrs: str
    ) -> list[Element]:
        return [
            e
            for e in self.iter()[1:]
            if (tag is None or e.tag == tag)
            and (cls is None or cls in e.classes)
            and all(e.attrs.get(k.replace("_", "-")) == v for k, v in attrs.items())
        ]


class _Builder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.current = self.root
        self.elements: list[Element] = []
        self.doctype: str | None = None

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs}, parent=self.current)
        self.current.children.append(element)
        self.elements.append(element)
        if tag not in _VOID:
            self.current = element

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs}, parent=self.current)
        self.current.children.append(element)
        self.elements.append(element)

    def handle_endtag(self, tag: str) -> None:
        node: Element | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        if node is None:
            raise AssertionError(f"end tag </{tag}> without a matching start tag")
        if node is not self.current and tag not in _SELF_CLOSING:
            raise AssertionError(
                f"</{tag}> closes <{self.current.tag}> implicitly: mismatched markup"
            )
        self.current = node.parent or self.root

    def handle_data(self, data: str) -> None:
        node: Element | None = self.current
        while node is not None:
            node.text_parts.append(data)
            node = node.parent


@dataclass(eq=False)
class Page:
    """A parsed report."""

    root: Element
    elements: list[Element] = field(repr=False)
    doctype: str | None

    def by_id(self, element_id: str) -> Element:
        for element in self.elements:
            if element.attrs.get("id") == element_id:
                return element
        raise KeyError(element_id)

    def find_all(
        self, tag: str | None = None, *, cls: str | None = None, **attrs: str
    ) -> list[Element]:
        return self.root.find_all(tag, cls=cls, **attrs)

    @property
    def text(self) -> str:
        return self.root.text


def parse(html: str) -> Page:
    """Parse ``html``; raises ``AssertionError`` on mismatched end tags or unclosed elements."""
    builder = _Builder()
    builder.feed(html)
    builder.close()
    if builder.current is not builder.root:
        raise AssertionError(f"<{builder.current.tag}> is never closed")
    return Page(builder.root, builder.elements, builder.doctype)
