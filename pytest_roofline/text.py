"""Text from users on its way to a terminal, a message or a file: escaped, never acted on.

Two policies, one place (docs/hostile-input.md):

* :func:`terminal_safe`: what is written to a terminal shows control characters as escapes.
* :func:`shown`: how a message names a value that may hold bytes that are not UTF-8 (Python
  decodes those from argv, file names and the environment as lone surrogates, ``\\udcff``).
"""

from __future__ import annotations

__all__ = ["is_utf8", "shown", "terminal_safe"]


def terminal_safe(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every character a terminal would act on shown as its escape instead.

    Control characters (``\\x1b`` of an escape sequence, ``\\r``, ``\\n``, C1 controls such as
    ``\\x9b``), bidirectional and other format characters (``\\u202e``), and lone surrogates (text
    decoded from bytes that were not UTF-8, ``\\udcff``) are written as Python writes them in a
    string literal; printable Unicode is kept. Everything pytest-roofline writes to a terminal
    passes through here, so an owner, a label or a path from user input cannot clear the screen,
    retitle the window, overwrite a line or forge one.

    :param keep_newlines: keep ``\\n`` (a message of several lines; each line is still escaped).
    """
    if text.isprintable():
        return text
    return "".join(
        ch
        if ch.isprintable() or (keep_newlines and ch == "\n")
        else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


def is_utf8(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8 (it holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown(text: str) -> str:
    """``text`` for a message: undecodable bytes as ``\\xff`` (the bytes given), controls escaped.

    ``'lab\\udcffel'`` (the argument ``lab<0xff>el`` decoded by Python) is shown ``lab\\xffel``;
    a lone surrogate that stands for no byte is shown as its escape (``\\ud800``).
    """
    raw = bytearray()
    for ch in text:
        try:
            raw += ch.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            raw += ch.encode("unicode_escape")
    return terminal_safe(raw.decode("utf-8", "backslashreplace"))
