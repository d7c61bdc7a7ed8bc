"""Configuration: the one place where precedence is decided.

Precedence, highest first: marker > command line > ini (``pytest.ini`` / ``pyproject.toml``) >
``roofline.yaml`` > defaults. The plugin reads options and ini values once, hands them here as
plain mappings, and everything else receives the frozen :class:`RooflineConfig` or a per-test
:class:`TestSettings`.

Why one long module: the one place where the five layers of settings are merged (the precedence
is implemented once); each setting's parser and error message live beside the merge.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import cast

from pytest_roofline.config.bounded_yaml import load_bounded
from pytest_roofline.config.defaults import CONFIRM_CHOICES, DEFAULTS, Confirm, GateOn
from pytest_roofline.config.labels import check_label, check_nonempty
from pytest_roofline.config.markers import MarkerSettings, parse_soak
from pytest_roofline.config.outputs import check_outputs, protected_paths
from pytest_roofline.config.ownership import OwnerRule, match_owner, parse_owner_rules
from pytest_roofline.config.sla import SlaSpec, parse_sla
from pytest_roofline.config.workload import WorkloadSlice, parse_slices
from pytest_roofline.errors import ConfigError
from pytest_roofline.hardware.target import HardwareTarget, target_from_mapping
from pytest_roofline.units import parse_duration
from pytest_roofline.vocabulary import FAILS_ON

__all__ = [
    "AB_KEYS",
    "DEFAULTS",
    "GATE_CHOICES",
    "MAX_WORKER_PAIRS",
    "AbSettings",
    "GateSettings",
    "RooflineConfig",
    "TestSettings",
    "build_config",
    "default_pair_time_s",
    "load_yaml",
    "parse_ab",
    "parse_tag",
    "resolve_test",
]

GATE_CHOICES: tuple[GateOn, ...] = FAILS_ON
CONFIG_FILENAME = "roofline.yaml"
YAML_KEYS = (
    "target", "targets", "slices", "owners", "sla", "gate", "tags", "layers",
    "budget", "min_samples", "max_samples", "warmup", "store", "counters", "ab",
    "canary", "blas_threads",
)  # fmt: skip
GATE_KEYS = (
    "alpha",
    "min_effect",
    "max_margin",
    "unknown_extension",
    "replay",
    "history",
    "confirm",
    "confirm_time",
)
AB_KEYS = ("rounds", "budget", "setup", "import_root", "worker_pairs", "pin_cpus")
MAX_WORKER_PAIRS = 8
"""The most pairs of worker processes ``ab`` starts (``ab.worker_pairs``, ``--worker-pairs``)."""


DEFAULT_LAYERS: Mapping[str, tuple[str, ...]] = {
    "data": ("dataset", "slice*"),
    "model": ("model", "git_commit", "git_dirty"),
    "runtime": ("python", "pytest", "numpy", "scipy", "blas*", "env_*", "torch", "cuda*"),
    "hardware": ("cpu", "cpu_count", "machine", "gpu", "target"),
}


@dataclass(frozen=True, slots=True)
class GateSettings:
    """How strict the gate is: significance, margins, how long an UNKNOWN test is sampled,
    replays, history, and whether first-look regressions are confirmed by paired rounds."""

    alpha: float = DEFAULTS.alpha
    min_effect: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULTS.min_effect))
    max_margin: float = DEFAULTS.max_margin
    unknown_extension: float = DEFAULTS.unknown_extension
    replay: int = DEFAULTS.replay
    history: int = DEFAULTS.history
    confirm: Confirm = DEFAULTS.confirm
    # How long each pair of worker processes may spend confirming first-look regressions, and
    # as long again settling UNKNOWN first looks after them (plugin.confirm.RoundsBudget); 0
    # settles no UNKNOWN first look; None: the default of default_pair_time_s.
    confirm_time_s: float | None = None

    def settle_time_s(self, session_s: float, tests: int = 0) -> float:
        """The time a pair of workers may spend settling UNKNOWN first looks, asked about
        ``tests`` tests in a session that has run ``session_s`` seconds: ``gate.confirm_time``,
        else :func:`default_pair_time_s`."""
        if self.confirm_time_s is not None:
            return self.confirm_time_s
        return default_pair_time_s(session_s, tests)

    def confirm_time_for_regressions_s(self, session_s: float, tests: int = 0) -> float:
        """The time a pair of workers may spend confirming first-look regressions: as
        :meth:`settle_time_s`, except that ``gate.confirm_time: 0`` (settle nothing) leaves the
        regressions their default time. A regression not reached in time stays unconfirmed."""
        if self.confirm_time_s:
            return self.confirm_time_s
        return default_pair_time_s(session_s, tests)


def default_pair_time_s(session_s: float, tests: int) -> float:
    """A pair of workers' default time for ``tests`` tests after a session of ``session_s`` s.

    As long again as the session has run (so each kind of rounds, confirming first-look
    regressions and settling UNKNOWN first looks, at most about doubles a long run), at
    least ``DEFAULTS.min_confirm_time_s``, and at least ``DEFAULTS.confirm_time_per_test_s`` per
    test asked (a suite-wide regression is confirmed test by test, not cut off after the first
    few), that last term at most ``DEFAULTS.max_confirm_time_s``.

    >>> default_pair_time_s(12.0, 2), default_pair_time_s(95.0, 2), default_pair_time_s(12.0, 10)
    (30.0, 95.0, 120.0)
    >>> default_pair_time_s(12.0, 1000)
    300.0
    """
    per_test = min(DEFAULTS.max_confirm_time_s, max(0, tests) * DEFAULTS.confirm_time_per_test_s)
    return max(DEFAULTS.min_confirm_time_s, session_s, per_test)


@dataclass(frozen=True, slots=True)
class RooflineConfig:
    """Every session-wide setting, resolved once at configure time."""

    enabled: bool
    rootdir: Path
    config_path: Path | None
    target: str
    targets: Mapping[str, HardwareTarget]
    store_path: Path
    save_label: str | None
    baseline_label: str | None
    json_path: Path | None
    markdown_path: Path | None
    report_path: Path | None
    budget_s: float
    min_samples: int
    max_samples: int
    warmup_s: float
    gate_on: GateOn
    gate: GateSettings
    tags: Mapping[str, str]
    layers: Mapping[str, tuple[str, ...]]
    slices: Mapping[str, tuple[WorkloadSlice, ...]]
    owners: tuple[OwnerRule, ...]
    sla: SlaSpec
    summary: bool
    counters: bool
    canary: bool = True
    blas_threads: int | None = None
    # Seconds each measured test is soaked after its measurement (0: no soak).
    soak_s: float = 0.0


@dataclass(frozen=True, slots=True)
class TestSettings:
    """Settings for one test after marker > session precedence."""

    __test__ = False  # not a pytest test class

    nodeid: str
    owners: tuple[str, ...]
    rollback: str | None
    sla: SlaSpec
    precision: str | None
    budget_s: float
    slices: tuple[WorkloadSlice, ...] | None
    soak_s: float = 0.0


def load_yaml(path: Path) -> dict[str, object]:
    """Read ``roofline.yaml`` within bounds (:mod:`~.bounded_yaml`); errors name the file."""
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory; give the path of a roofline.yaml file")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise ConfigError(
            f"{path}: cannot read the roofline config: {exc.strerror or exc}"
        ) from exc
    data = load_bounded(raw, where=str(path))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of keys {list(YAML_KEYS)}")
    unknown = sorted(str(k) for k in data if k not in YAML_KEYS)
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) {unknown}; valid keys: {list(YAML_KEYS)}")
    return cast("dict[str, object]", data)


def parse_tag(text: str, *, where: str) -> tuple[str, str]:
    """Split ``KEY=VALUE``; the key must be non-empty."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(
            f"{where}: expected KEY=VALUE (e.g. dataset=imagenet-val-2024), got {text!r}"
        )
    return key.strip(), value.strip()


def _parse_fraction(value: object, *, where: str) -> float:
    """A margin written as ``5%`` or ``0.05``."""
    number: float
    if isinstance(value, str) and value.strip().endswith("%"):
        try:
            number = float(value.strip()[:-1]) / 100
        except ValueError:
            number = math.nan
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        number = float(value)
    else:
        number = math.nan
    if not math.isfinite(number) or not 0 <= number < 10:
        raise ConfigError(
            f'{where}: expected a relative margin such as "5%" or 0.05, got {value!r}'
        )
    return number


def _positive_int(value: object, *, where: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{where}: expected an integer >= {minimum}, got {value!r}")
    return value


def _section(value: object, keys: Sequence[str], *, where: str) -> Mapping[str, object]:
    """A mapping section of ``roofline.yaml`` whose keys are all among ``keys``."""
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: expected a mapping with keys {list(keys)}, got {value!r}")
    unknown = sorted(str(k) for k in value if k not in keys)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; valid keys: {list(keys)}")
    return value


def _parse_gate(value: object, *, where: str) -> GateSettings:
    if value is None:
        return GateSettings()
    value = _section(value, GATE_KEYS, where=where)
    alpha = value.get("alpha", DEFAULTS.alpha)
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0 < alpha < 0.5:
        raise ConfigError(
            f"{where}.alpha: expected a significance level in (0, 0.5), got {alpha!r}"
        )
    min_effect = dict(GateSettings().min_effect)
    raw_effect = value.get("min_effect")
    if raw_effect is not None:
        if not isinstance(raw_effect, Mapping):
            raise ConfigError(
                f'{where}.min_effect: expected {{p95: "5%", p99: "10%"}}, got {raw_effect!r}'
            )
        for key, margin in raw_effect.items():
            if key not in ("p50", "p95", "p99"):
                raise ConfigError(
                    f"{where}.min_effect: unknown quantile {key!r}; valid: p50, p95, p99"
                )
            min_effect[key] = _parse_fraction(margin, where=f"{where}.min_effect.{key}")
    max_margin = _parse_fraction(
        value.get("max_margin", DEFAULTS.max_margin), where=f"{where}.max_margin"
    )
    if not max_margin > 0:
        raise ConfigError(f'{where}.max_margin: expected a positive margin such as "100%", got 0')
    too_wide = {k: m for k, m in min_effect.items() if m > max_margin}
    if too_wide:
        raise ConfigError(
            f"{where}: min_effect {too_wide} is above max_margin {max_margin:g}: raise "
            "gate.max_margin or lower gate.min_effect"
        )
    extension = value.get("unknown_extension", DEFAULTS.unknown_extension)
    if (
        isinstance(extension, bool)
        or not isinstance(extension, (int, float))
        or not 1 <= extension <= 100
    ):
        raise ConfigError(
            f"{where}.unknown_extension: expected a factor of the budget from 1 (never sample "
            f"past the budget) to 100, got {extension!r}"
        )
    confirm = value.get("confirm", DEFAULTS.confirm)
    if confirm not in CONFIRM_CHOICES:
        raise ConfigError(
            f"{where}.confirm: expected one of {list(CONFIRM_CHOICES)}, got {confirm!r}"
        )
    confirm_time = value.get("confirm_time")
    # 0 turns settling off (regressions are still confirmed); parse_duration wants > 0.
    confirm_time_s = (
        None
        if confirm_time is None
        else 0.0
        if not isinstance(confirm_time, bool) and confirm_time in (0, "0", "0s")
        else parse_duration(confirm_time, where=f"{where}.confirm_time")
    )
    return GateSettings(
        confirm_time_s=confirm_time_s,
        alpha=float(alpha),
        min_effect=min_effect,
        max_margin=max_margin,
        unknown_extension=float(extension),
        confirm=confirm,
        replay=_positive_int(
            value.get("replay", DEFAULTS.replay), where=f"{where}.replay", minimum=0
        ),
        history=_positive_int(value.get("history", DEFAULTS.history), where=f"{where}.history"),
    )


@dataclass(frozen=True, slots=True)
class AbSettings:
    """Defaults of ``pytest-roofline ab`` from the ``ab:`` section (the command line overrides them).

    ``budget_s`` is the measurement time per test and side over all rounds (each round gets
    ``budget_s / rounds``). Forty rounds of 2.5 s since stop 42 (thirty-two of 2 s until then,
    twenty-four of 1.5 s until stop 31, sixteen of 1 s until stop 29, eight until stop 27),
    windows of 62.5 ms each time. Stop 42 alternated 32 / 2 s, 40 / 2.5 s and 48 / 3 s run by
    run on the validation fixture (``docs/paired.md``, "Stop 42"): unchanged tests escalated
    22, 11 and 8 of 100 at 49.3, 49.8 and 57.1 s a run (stop 38: 32.3% against 23.0% of 300
    at 14% more time); a test decided early does not reach the cap, so the extra pairs go to
    the undecided ones. Pairs dropped for a disturbed host are replaced up to ``rounds / 2``
    more (20 now, 16 before), so on a busy host a test may run 60 pairs, 3.75 s a side. Before
    that, measured
    here on the validation fixture (``docs/paired.md``, "Thirty-two window pairs"), the same
    100 A/A test-trials run to 48 pairs and decided by ``ab``'s stop rule at each cap,
    32 escalated 2 where 24 escalated 10, for 12% more window pairs (the sequential stop
    decides most tests early; mostly the undecided ones use the extra pairs); side by side in
    real runs, 2 of 50 against 8 of 50, at 14% more median wall time. The price of
    short windows: one 62.5 ms window gives a 1 ms call ~62 samples, so a call slower than
    about 0.63 ms has its p99 not assessed (100 a window,
    :func:`pytest_roofline.stats.paired.min_round_samples`) and one slower than about 3.2 ms
    its p95 (20): a regression only in that tail ships, noted as escape risk. A larger
    ``--budget`` at the same ``--rounds`` brings them back.

    ``worker_pairs`` pairs of worker processes take each test's window pairs in turn, and a
    regression rolls back only when every pair finds it (``gate.worker_agreement``): three,
    as many as once measured a regressed test again one after the other, now within the one
    alternation (``docs/paired.md``, "Three pairs of worker processes, in turn").

    ``pin_cpus`` holds both windows of each window pair on one CPU, the pairs taking the CPUs
    in turn (``docs/paired.md``, "One CPU per window pair"): 20 A/A runs alternating it with
    the scheduler's placement escalated 2 of 100 test-runs held against 5 of 100 free on the
    quiet VM, and 28 against 37 under the bursty neighbour, none rolled back either way.
    """

    rounds: int = 40
    budget_s: float = 2.5
    setup: str | None = None
    import_root: str = "."
    worker_pairs: int = 3
    pin_cpus: bool = True


def parse_ab(value: object, *, where: str) -> AbSettings:
    """The ``ab:`` section of ``roofline.yaml``: ``{rounds: 40, budget: 2.5s, setup: CMD,
    import_root: src, worker_pairs: 3, pin_cpus: true}``."""
    if value is None:
        return AbSettings()
    value = _section(value, AB_KEYS, where=where)
    defaults = AbSettings()
    rounds = _positive_int(value.get("rounds", defaults.rounds), where=f"{where}.rounds", minimum=3)
    worker_pairs = _positive_int(
        value.get("worker_pairs", defaults.worker_pairs), where=f"{where}.worker_pairs", minimum=1
    )
    if worker_pairs > MAX_WORKER_PAIRS:
        raise ConfigError(
            f"{where}.worker_pairs: expected an integer from 1 to {MAX_WORKER_PAIRS} (each pair is "
            f"two more pytest processes), got {worker_pairs!r}"
        )
    pin_cpus = value.get("pin_cpus", defaults.pin_cpus)
    if not isinstance(pin_cpus, bool):
        raise ConfigError(f"{where}.pin_cpus: expected true or false, got {pin_cpus!r}")
    budget = value.get("budget")
    budget_s = (
        parse_duration(budget, where=f"{where}.budget") if budget is not None else defaults.budget_s
    )
    texts: dict[str, str | None] = {}
    for key in ("setup", "import_root"):
        text = value.get(key)
        if text is not None and (not isinstance(text, str) or not text.strip()):
            raise ConfigError(
                f"{where}.{key}: expected a non-empty string"
                + (" (a shell command)" if key == "setup" else " (a directory, e.g. src)")
                + f", got {text!r}"
            )
        texts[key] = text
    return AbSettings(
        rounds=rounds,
        budget_s=budget_s,
        setup=texts["setup"],
        import_root=texts["import_root"] or defaults.import_root,
        worker_pairs=worker_pairs,
        pin_cpus=pin_cpus,
    )


def _parse_layers(value: object, *, where: str) -> Mapping[str, tuple[str, ...]]:
    if value is None:
        return DEFAULT_LAYERS
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str)
        and isinstance(v, Sequence)
        and not isinstance(v, str)
        and all(isinstance(t, str) for t in v)
        for k, v in value.items()
    ):
        raise ConfigError(
            f"{where}: expected a mapping of layer name to a list of tag names or globs, "
            f"e.g. {{data: [dataset], runtime: [python, env_*]}}, got {value!r}"
        )
    return {str(k): tuple(v) for k, v in value.items()}


def _parse_tags_mapping(value: object, *, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise ConfigError(f"{where}: expected a mapping of tag name to value, got {value!r}")
    return {k: str(v) for k, v in value.items()}


_FLAG_WORDS = {
    "1": True, "true": True, "yes": True, "on": True,
    "0": False, "false": False, "no": False, "off": False,
}  # fmt: skip
# Command-line value options and what their value is, for the "empty value" message.
_CLI_VALUE_KEYS: Mapping[str, str] = {
    "config": "path", "target": "target name", "store": "path", "save": "label",
    "baseline": "label", "json": "path", "report": "path", "markdown": "path",
    "budget": "duration", "blas_threads": "number of threads", "confirm": "auto or never",
    "soak": "duration",
}  # fmt: skip


def _parse_flag(value: object, *, where: str) -> bool:
    """A boolean written as YAML's or ini's true/false, yes/no, on/off, 1/0 (any case)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, (str, int)) and str(value).strip().lower() in _FLAG_WORDS:
        return _FLAG_WORDS[str(value).strip().lower()]
    raise ConfigError(f"{where}: expected true or false (or yes/no, on/off), got {value!r}")


def _first(*values: object) -> object:
    """The first value that is set: how every precedence chain below is resolved."""
    for value in values:
        if value is not None and value != "":
            return value
    return None


def build_config(
    *,
    rootdir: Path,
    cli: Mapping[str, object],
    ini: Mapping[str, object],
    invocation_dir: Path | None = None,
    inifile: Path | None = None,
) -> RooflineConfig:
    """Resolve the session's configuration from command line, ini and ``roofline.yaml`` values.

    ``cli`` and ``ini`` map the option names without the ``roofline_`` prefix (``target``,
    ``store``, ``budget``, ``tags``...) to the raw values; ``None`` means "not given".
    Relative paths from the command line are taken from ``invocation_dir`` (as pytest's own
    ``--junitxml`` is); those from ini or ``roofline.yaml`` from ``rootdir``. Every layer's value
    is validated, not only the one that wins, and no output may overwrite the store, its journal
    files, ``roofline.yaml`` or ``inifile`` (:mod:`~.outputs`).
    """
    invocation_dir = invocation_dir or rootdir
    # A value given on the command line is never empty: ``--roofline-baseline=$BRANCH`` with
    # the variable unset must not turn the gate off in silence (an ini key may be blank: unset).
    for key in _CLI_VALUE_KEYS:
        value = cli.get(key)
        if isinstance(value, str):
            check_nonempty(value, where=f"--roofline-{key}", what=_CLI_VALUE_KEYS[key])

    def located(key: str, *more: object) -> Path | None:
        """The path set for ``key`` by precedence, made absolute against where it was written."""
        for base, value in (
            (invocation_dir, cli.get(key)),
            (rootdir, ini.get(key)),
            *((rootdir, m) for m in more),
        ):
            if value is not None and value != "":
                path = Path(str(value))
                return path if path.is_absolute() else base / path
        return None

    enabled = bool(_first(cli.get("enabled"), ini.get("enabled"), False))

    config_path = located("config")
    if config_path is not None:
        if config_path.is_dir():
            raise ConfigError(
                f"--roofline-config: {config_path} is a directory; give the path of a roofline.yaml"
            )
        if not config_path.is_file():
            raise ConfigError(
                f"--roofline-config: {config_path} does not exist; give the path of a roofline.yaml"
            )
    else:
        candidate = rootdir / CONFIG_FILENAME
        config_path = candidate if candidate.is_file() else None
    data = load_yaml(config_path) if config_path is not None else {}
    src = str(config_path) if config_path is not None else CONFIG_FILENAME

    targets_raw = data.get("targets") or {}
    if not isinstance(targets_raw, Mapping):
        raise ConfigError(f"{src}: targets: expected a mapping of target name to peaks")
    targets = {
        str(name): target_from_mapping(str(name), spec, where=f"{src}: targets.{name}")
        for name, spec in targets_raw.items()
    }
    slices_raw = data.get("slices") or {}
    if not isinstance(slices_raw, Mapping):
        raise ConfigError(f"{src}: slices: expected a mapping of group name to a list of slices")
    slices = {
        str(group): parse_slices(
            items,
            where=f"{src}: slices.{group}",
            group=str(group),
            base_dir=config_path.parent if config_path is not None else rootdir,
        )
        for group, items in slices_raw.items()
    }

    # Every layer is parsed, so a bad roofline.yaml value is reported even when the command
    # line overrides it (it would surface the day the override goes); the first one set wins.
    def duration(key: str, yaml_key: str, default: float, *, at_most: float | None = None) -> float:
        found: list[float] = []
        for origin, value in (
            (f"--roofline-{key}", cli.get(key)),
            (f"ini roofline_{key}", ini.get(key)),
            (f"{src}: {yaml_key}", data.get(yaml_key)),
        ):
            if value is not None and value != "":
                seconds = parse_duration(value, where=origin)
                if at_most is not None and seconds > at_most:
                    raise ConfigError(
                        f"{origin}: {value!r} is longer than the {at_most:g} s allowed; "
                        f"{key} runs before every measured test"
                    )
                found.append(seconds)
        return found[0] if found else default

    def integer(key: str, default: int) -> int:
        found: list[int] = []
        for origin, value in (
            (f"ini roofline_{key}", ini.get(key)),
            (f"{src}: {key}", data.get(key)),
        ):
            if value is not None and value != "":
                if isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
                    value = int(value)
                found.append(_positive_int(value, where=origin))
        return found[0] if found else default

    def text(key: str, *, what: str) -> str | None:
        """A text setting: command line > ini > roofline.yaml, each layer checked."""
        found: list[str] = []
        for origin, value in (
            (f"--roofline-{key}", cli.get(key)),
            (f"ini roofline_{key}", ini.get(key)),
            (f"{src}: {key}", data.get(key)),
        ):
            if value is None or value == "":
                continue
            if not isinstance(value, str):
                raise ConfigError(f"{origin}: expected {what}, got {value!r}")
            found.append(value)
        return found[0] if found else None

    gate_on = _first(cli.get("gate"), ini.get("gate"), DEFAULTS.gate_on)
    if gate_on not in GATE_CHOICES:
        raise ConfigError(
            f"--roofline-gate / roofline_gate: expected one of {list(GATE_CHOICES)}, got {gate_on!r}"
        )

    tags = _parse_tags_mapping(data.get("tags"), where=f"{src}: tags")
    for origin, entries in (
        ("ini roofline_tags", ini.get("tags")),
        ("--roofline-tag", cli.get("tags")),
    ):
        for entry in cast("Sequence[str]", entries or ()):
            key, value = parse_tag(entry, where=origin)
            tags[key] = value

    yaml_store = data.get("store")
    if yaml_store is not None and (not isinstance(yaml_store, str) or not yaml_store.strip()):
        raise ConfigError(f"{src}: store: expected a path (text), got {yaml_store!r}")
    store_path = located("store", yaml_store, DEFAULTS.store)
    assert store_path is not None  # the default is always set
    target = text("target", what="a target name (a preset, a config target, host or auto)")
    min_samples = integer("min_samples", DEFAULTS.min_samples)
    max_samples = integer("max_samples", DEFAULTS.max_samples)
    if max_samples < min_samples:
        raise ConfigError(f"max_samples ({max_samples}) must be >= min_samples ({min_samples})")
    counters = [
        _parse_flag(value, where=origin)
        for origin, value in (
            ("--roofline-no-counters", cli.get("counters")),
            ("ini roofline_counters", ini.get("counters")),
            (f"{src}: counters", data.get("counters")),
        )
        if value is not None and value != ""
    ]
    canary = [
        _parse_flag(value, where=origin)
        for origin, value in (
            ("--roofline-no-canary", cli.get("canary")),
            ("ini roofline_canary", ini.get("canary")),
            (f"{src}: canary", data.get("canary")),
        )
        if value is not None and value != ""
    ]
    blas_threads = [
        parse_blas_threads(value, where=origin)
        for origin, value in (
            ("--roofline-blas-threads", cli.get("blas_threads")),
            ("ini roofline_blas_threads", ini.get("blas_threads")),
            (f"{src}: blas_threads", data.get("blas_threads")),
        )
        if value is not None and value != ""
    ]
    soak = [
        parse_soak(value, where=origin)
        for origin, value in (
            ("--roofline-soak", cli.get("soak")),
            ("ini roofline_soak", ini.get("soak")),
        )
        if value is not None and value != ""
    ]
    gate = _parse_gate(data.get("gate"), where=f"{src}: gate")
    confirm = [
        value
        for origin, value in (
            ("--roofline-confirm", cli.get("confirm")),
            ("ini roofline_confirm", ini.get("confirm")),
        )
        if value is not None and value != "" and _check_confirm(value, where=origin)
    ]
    if confirm:
        gate = replace(gate, confirm=cast(Confirm, confirm[0]))
    labels = {
        key: check_label(value, where=origin)
        for key, origin, value in (
            ("save", "--roofline-save", cli.get("save")),
            ("save", "ini roofline_save", ini.get("save")),
            ("baseline", "--roofline-baseline", cli.get("baseline")),
            ("baseline", "ini roofline_baseline", ini.get("baseline")),
        )[::-1]  # reversed: the command line's value is set last and wins
        if value is not None and value != ""
    }
    json_path, report_path, markdown_path = located("json"), located("report"), located("markdown")
    check_outputs(
        [
            (f"--roofline-{name}", path)
            for name, path in (
                ("json", json_path),
                ("report", report_path),
                ("markdown", markdown_path),
            )
            if path is not None
        ],
        protected_paths(store_path, config=config_path, ini=inifile),
    )

    return RooflineConfig(
        enabled=enabled,
        rootdir=rootdir,
        config_path=config_path,
        target=target or DEFAULTS.target,
        targets=targets,
        store_path=store_path,
        save_label=labels.get("save"),
        baseline_label=labels.get("baseline"),
        json_path=json_path,
        markdown_path=markdown_path,
        report_path=report_path,
        budget_s=duration("budget", "budget", DEFAULTS.budget_s),
        min_samples=min_samples,
        max_samples=max_samples,
        warmup_s=duration("warmup", "warmup", DEFAULTS.warmup_s, at_most=DEFAULTS.max_warmup_s),
        gate_on=gate_on,
        gate=gate,
        tags=tags,
        layers=_parse_layers(data.get("layers"), where=f"{src}: layers"),
        slices=slices,
        owners=parse_owner_rules(data.get("owners"), where=f"{src}: owners"),
        sla=parse_sla(data.get("sla"), where=f"{src}"),
        summary=bool(_first(cli.get("summary"), ini.get("summary"), True)),
        counters=counters[0] if counters else True,
        canary=canary[0] if canary else True,
        blas_threads=blas_threads[0] if blas_threads else None,
        soak_s=soak[0] if soak else 0.0,
    )


def _check_confirm(value: object, *, where: str) -> bool:
    if value not in CONFIRM_CHOICES:
        raise ConfigError(f"{where}: expected one of {list(CONFIRM_CHOICES)}, got {value!r}")
    return True


def parse_blas_threads(value: object, *, where: str) -> int:
    """A BLAS thread count: a whole number >= 1 (``--roofline-blas-threads=1``)."""
    if isinstance(value, bool):
        value = None
    text = str(value).strip() if isinstance(value, (int, str)) else ""
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise ConfigError(
            f"{where}: expected a whole number of BLAS threads >= 1 (e.g. 1), got {value!r}"
        )
    return int(text)


def resolve_test(
    config: RooflineConfig, marker: MarkerSettings | None, nodeid: str
) -> TestSettings:
    """Apply marker > session precedence for one test."""
    marker = marker or MarkerSettings()
    rule = match_owner(config.owners, nodeid)
    slices: tuple[WorkloadSlice, ...] | None
    if isinstance(marker.slices, str):
        if marker.slices not in config.slices:
            known = sorted(config.slices) or ["(none defined)"]
            where = config.config_path or CONFIG_FILENAME
            raise ConfigError(
                f"{nodeid}: @pytest.mark.roofline(slices={marker.slices!r}) names no slice group "
                f"in {where}; groups: {known}. Define it under 'slices:' or pass an inline list."
            )
        slices = config.slices[marker.slices]
    else:
        slices = marker.slices
    return TestSettings(
        nodeid=nodeid,
        owners=marker.owners or (rule.owners if rule else ()),
        rollback=_first(marker.rollback, rule.rollback if rule else None),  # type: ignore[arg-type]
        sla=config.sla.overridden_by(marker.sla),
        precision=marker.precision,
        budget_s=marker.budget_s if marker.budget_s is not None else config.budget_s,
        slices=slices,
        soak_s=marker.soak_s if marker.soak_s is not None else config.soak_s,
    )
