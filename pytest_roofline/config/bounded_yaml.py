"""``roofline.yaml`` read with bounds: size, nesting depth, values after alias expansion, cycles.

``yaml.safe_load`` constructs only plain data, but it does not bound the work: a "billion laughs"
document (ten levels of ten aliases) is a few hundred bytes that expand to 10**9 values as soon
as anything walks them, 50,000 nested ``[`` exhaust Python's recursion limit, and an alias inside
its own anchor (``&p {me: *p}``) builds a structure that contains itself. The usual guard, as in
``defusedxml`` for XML entity expansion, is to refuse such a document before using it:

1. at most :data:`MAX_BYTES` bytes, and UTF-8 (a config is a few kilobytes of text);
2. one pass over the parser's events (iterative, in libyaml's C parser when present) that
   refuses more than :data:`MAX_DEPTH` levels of nesting or :data:`MAX_VALUES` values;
3. after composing the node graph (aliases are shared nodes, not copies), one iterative walk
   that refuses a node reachable from itself and counts the values the document would have with
   every alias expanded, refusing more than :data:`MAX_VALUES`.

Only then is the graph constructed into Python objects. Each refusal is a :class:`ConfigError`
that names the file, so the plugin reports it as a usage error (exit status 4).
"""

from __future__ import annotations

from collections.abc import Iterable

import yaml

from pytest_roofline.errors import ConfigError

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_VALUES", "load_bounded"]

MAX_BYTES = 256 * 1024
MAX_DEPTH = 64
MAX_VALUES = 20_000

# libyaml's parser when PyYAML was built with it (faster, and iterative); the pure-Python one else.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_OPEN = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSE = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


def _line(node_or_event: object) -> str:
    mark = getattr(node_or_event, "start_mark", node_or_event)
    line = getattr(mark, "line", None)
    return f"line {line + 1}: " if isinstance(line, int) else ""


def _check_events(text: str, where: str) -> None:
    depth = values = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, _OPEN):
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(
                    f"{where}: {_line(event)}nested more than {MAX_DEPTH} levels deep; a "
                    "roofline config is a few levels of mappings and lists"
                )
        elif isinstance(event, _CLOSE):
            depth -= 1
        if isinstance(event, yaml.NodeEvent):
            values += 1
            if values > MAX_VALUES:
                raise ConfigError(
                    f"{where}: more than {MAX_VALUES} values; is this the right file?"
                )


def _children(node: yaml.Node) -> Iterable[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return node.value  # type: ignore[no-any-return]
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return ()


def _check_graph(root: yaml.Node, where: str) -> None:
    """Refuse a node that contains itself, and more than MAX_VALUES values once aliases expand."""
    in_progress = -1
    sizes: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            size = 1 + sum(sizes[id(child)] for child in _children(node))
            if size > MAX_VALUES:
                raise ConfigError(
                    f"{where}: {_line(node)}expands to more than {MAX_VALUES} values through "
                    "aliases (*name); refusing a document that multiplies itself"
                )
            sizes[key] = size
            continue
        state = sizes.get(key)
        if state == in_progress:
            # Every node marked in progress and met again is an ancestor: a cycle.
            raise ConfigError(
                f"{where}: {_line(node)}an alias refers to itself: the anchored value contains "
                "an alias to its own anchor (a circular alias); write the value out instead"
            )
        if state is not None:
            continue
        sizes[key] = in_progress
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node))


def load_bounded(data: bytes, *, where: str) -> object:
    """Parse a YAML document within the bounds above; ``None`` for an empty document.

    :param where: the file, for messages.
    :raises ConfigError: too large, not UTF-8, not YAML, too deep, too many values (directly or
        through aliases), or a circular alias.
    """
    if len(data) > MAX_BYTES:
        raise ConfigError(
            f"{where}: the file is larger than {MAX_BYTES // 1024} KiB ({len(data)} bytes); a "
            "roofline config is a few kilobytes: is this the right file?"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{where}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
            "save the file as UTF-8"
        ) from None
    try:
        _check_events(text, where)
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_graph(node, where)
            return loader.construct_document(node)
        finally:
            loader.dispose()
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(exc):  # libyaml's own limit, met while looking ahead
            raise ConfigError(
                f"{where}: {_line(exc.problem_mark if isinstance(exc, yaml.MarkedYAMLError) else None)}"
                f"nested more than {MAX_DEPTH} levels deep; a roofline config is a few levels of "
                "mappings and lists"
            ) from None
        raise ConfigError(f"{where}: not valid YAML: {exc}") from None
