"""Who owns a test and where its rollback boundary lies."""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_roofline.errors import ConfigError

__all__ = ["OwnerRule", "match_owner", "parse_owner_rules", "parse_owners"]


@dataclass(frozen=True, slots=True)
class OwnerRule:
    """A glob on node ids that assigns owners and a rollback boundary."""

    pattern: str
    owners: tuple[str, ...]
    rollback: str | None


def parse_owners(value: object, *, where: str) -> tuple[str, ...]:
    """Owners as one name, a list of names, or a mapping of signing role to name.

    A mapping ``{"performance engineer": "alice", "compiler owner": "bob"}`` becomes
    ``("performance engineer: alice", "compiler owner: bob")`` so every role that must sign is named.
    """
    valid = 'a name ("kernels-team"), a list of names, or a mapping of role to name'
    if isinstance(value, str):
        if not value.strip():
            raise ConfigError(f"{where}: owner must not be empty; expected {valid}")
        return (value.strip(),)
    if isinstance(value, Mapping):
        if not value or not all(
            isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in value.items()
        ):
            raise ConfigError(
                f"{where}: owner mapping must map role names to owner names; expected {valid}"
            )
        return tuple(f"{role}: {name.strip()}" for role, name in value.items())
    if (
        isinstance(value, Sequence)
        and value
        and all(isinstance(v, str) and v.strip() for v in value)
    ):
        return tuple(v.strip() for v in value)
    raise ConfigError(f"{where}: expected {valid}, got {value!r}")


def parse_owner_rules(value: object, *, where: str) -> tuple[OwnerRule, ...]:
    """Validate the ``owners:`` section: ``{glob: {owner: ..., rollback: ...}}``."""
    if value is None:
        return ()
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"{where}: expected a mapping of node-id glob to {{owner: ..., rollback: ...}}, got {value!r}"
        )
    rules = []
    for pattern, spec in value.items():
        entry = f"{where}.{pattern!r}"
        if not isinstance(pattern, str) or not isinstance(spec, Mapping):
            raise ConfigError(f"{entry}: expected {{owner: NAME, rollback: TEXT}}, got {spec!r}")
        unknown = sorted(str(k) for k in spec if k not in ("owner", "rollback"))
        if unknown:
            raise ConfigError(
                f"{entry}: unknown key(s) {unknown}; valid keys: ['owner', 'rollback']"
            )
        if "owner" not in spec:
            raise ConfigError(f"{entry}: 'owner' is required")
        rollback = spec.get("rollback")
        if rollback is not None and not isinstance(rollback, str):
            raise ConfigError(f"{entry}: 'rollback' must be a string, got {rollback!r}")
        rules.append(
            OwnerRule(pattern, parse_owners(spec["owner"], where=f"{entry}.owner"), rollback)
        )
    return tuple(rules)


def match_owner(rules: Sequence[OwnerRule], nodeid: str) -> OwnerRule | None:
    """Return the first rule whose glob matches ``nodeid`` (rules keep their file order)."""
    for rule in rules:
        if fnmatch.fnmatchcase(nodeid, rule.pattern):
            return rule
    return None
