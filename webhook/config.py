"""Settings: one typed object per command, read from flags, `SERVINGGATE_*` variables and an
optional config file (a mounted ConfigMap), in that order of precedence.

Each field declares its flag, its parser and its help once (`setting(...)`); the flag parser,
the environment reader, the config-file reader and the table in docs/configuration.md come from that
declaration. A bad value stops the start with a message naming the flag or variable.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import orjson
import yaml

from .errors import OperatorError
from .featuregates import not_at, parse_feature_gates
from .kubeversion import AUTO, KubeVersion, parse_kubernetes_version

ENV_PREFIX = "SERVINGGATE_"

T = TypeVar("T")


class ConfigError(OperatorError, ValueError):
    """A setting has a bad value; the message names where it came from."""


# ---- value parsers: str -> value, raising ValueError with a short reason ----------------------


def parse_bool(raw: str) -> bool:
    low = raw.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError("must be true or false")


def int_range(lo: int | None = None, hi: int | None = None) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        try:
            value = int(str(raw).strip())
        except ValueError:
            raise ValueError("must be an integer") from None
        if lo is not None and value < lo:
            raise ValueError(f"must be at least {lo}")
        if hi is not None and value > hi:
            raise ValueError(f"must be at most {hi}")
        return value

    parse.__name__ = "int"
    return parse


def float_range(lo: float | None = None, hi: float | None = None) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        try:
            value = float(str(raw).strip())
        except ValueError:
            raise ValueError("must be a number") from None
        if value != value or (lo is not None and value < lo) or (hi is not None and value > hi):
            raise ValueError(f"must be a number between {lo} and {hi}")
        return value

    parse.__name__ = "float"
    return parse


def choice(*options: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = str(raw).strip()
        if value not in options:
            raise ValueError("must be one of " + ", ".join(options))
        return value

    parse.__name__ = "choice"
    return parse


def csv_list(raw: str) -> tuple[str, ...]:
    if isinstance(raw, (list, tuple)):
        return tuple(str(x).strip() for x in raw if str(x).strip())
    return tuple(part.strip() for part in str(raw).split(",") if part.strip())


def csv_set(raw: str) -> frozenset[str]:
    return frozenset(csv_list(raw))


def path_list(raw: str | Sequence[str]) -> tuple[str, ...]:
    """Paths: the values of a repeated flag or a config file's list as given, or one string
    separated as PATH is (`:`, `;` on Windows), as an environment variable holds them."""
    items = list(raw) if isinstance(raw, (list, tuple)) else str(raw).split(os.pathsep)
    return tuple(str(x).strip() for x in items if str(x).strip())


def non_empty(raw: str) -> str:
    value = str(raw).strip()
    if not value:
        raise ValueError("must not be empty")
    return value


def byte_size(raw: str) -> int:
    """`7340032`, `7Mi`, `512Ki`."""
    text = str(raw).strip()
    units = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "K": 1000, "M": 1000**2, "G": 1000**3}
    suffix = next((unit for unit in units if text.endswith(unit)), "")
    number, mult = (text[: -len(suffix)], units[suffix]) if suffix else (text, 1)
    try:
        value = int(number) * mult
    except ValueError:
        raise ValueError("must be a byte count such as 7340032 or 7Mi") from None
    if value < 1024:
        raise ValueError("must be at least 1Ki")
    return value


# ---- declaring settings -------------------------------------------------------------------------


def setting(default: Any, parse: Callable[[str], Any], help: str, *, flag: str | None = None, metavar: str | None = None, repeat: bool = False) -> Any:
    """Declare a setting field: its default, how a string becomes its value, and its help text.
    `repeat`: the flag may be given more than once, and `parse` gets the list of its values."""
    meta = {"parse": parse, "help": help, "flag": flag, "metavar": metavar, "repeat": repeat}
    if isinstance(default, (list, dict, set)):
        return field(default_factory=lambda: type(default)(default), metadata=meta)
    return field(default=default, metadata=meta)


def flag_of(f: dataclasses.Field[Any]) -> str:
    return f.metadata.get("flag") or "--" + f.name.replace("_", "-")


def env_of(f: dataclasses.Field[Any]) -> str:
    return ENV_PREFIX + f.name.upper()


def group(cls: type[T]) -> T:
    """Declare one concern of a command's settings: a field holding a group of settings (a dataclass
    of `setting(...)` fields), defaulted to the group's defaults. A command's settings class is a
    frozen dataclass of such fields, one per concern; its flags, variables and file keys stay flat."""
    return field(default_factory=cls, metadata={"group": cls})


def groups_of(cls: type) -> list[tuple[str, type]]:
    """(field name, group class) of each concern of a command's settings, in declaration order; a
    group on its own is one concern without a name."""
    named = [(f.name, f.metadata["group"]) for f in dataclasses.fields(cls) if "group" in f.metadata]
    return named or [("", cls)]


def _settings_fields(cls: type) -> list[dataclasses.Field[Any]]:
    """Every setting of `cls`, group after group; a name may appear in one group only, since flags,
    variables and file keys are flat."""
    fields = [f for _, g in groups_of(cls) for f in dataclasses.fields(g) if "parse" in f.metadata]
    names = [f.name for f in fields]
    if len(names) != len(set(names)):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise TypeError(f"{cls.__name__}: setting(s) {', '.join(twice)} declared in more than one group")
    return fields


def compose(cls: type[T], **values: Any) -> T:
    """`cls` from flat setting values (`port=8443`), each routed to the group that declares it;
    a name no group declares is a TypeError, as for a dataclass."""
    named = groups_of(cls)
    if named == [("", cls)]:
        return cls(**values)
    rest = dict(values)
    parts = {}
    for name, g in named:
        own = {f.name for f in dataclasses.fields(g)}
        parts[name] = g(**{k: rest.pop(k) for k in list(rest) if k in own})
    if rest:
        raise TypeError(f"{cls.__name__}: no setting named {', '.join(sorted(rest))}")
    return cls(**parts)


def add_arguments(parser: argparse.ArgumentParser, cls: type) -> None:
    """Add one flag per setting; defaults stay None so we can tell "not given" apart."""
    for f in _settings_fields(cls):
        parse = f.metadata["parse"]
        kwargs: dict[str, Any] = {"dest": f.name, "default": None, "help": f"{f.metadata['help']} [env {env_of(f)}; default {describe_default(f)}]"}
        if parse is parse_bool:
            kwargs["nargs"] = "?"
            kwargs["const"] = "true"
            kwargs["metavar"] = "BOOL"
        elif f.metadata.get("metavar"):
            kwargs["metavar"] = f.metadata["metavar"]
        if f.metadata.get("repeat"):
            kwargs["action"] = "append"
        parser.add_argument(flag_of(f), **kwargs)
    parser.add_argument(
        "--config",
        dest="_config_file",
        default=None,
        metavar="FILE",
        help=f"YAML or JSON file of settings (keys as the flags without --) [env {ENV_PREFIX}CONFIG]",
    )


def describe_default(f: dataclasses.Field[Any]) -> str:
    value = f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
    if isinstance(value, (tuple, list, frozenset, set)):
        return ",".join(sorted(value) if isinstance(value, (set, frozenset)) else value) or '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value) if value != "" else '""'


class _FileLoader(yaml.SafeLoader):
    """YAML as `safe_load` reads it, except that a float stays the text it was written as: every
    setting parses a string anyway, and `kubernetes-version: 1.30` must not become 1.3."""


def _as_written(loader: yaml.SafeLoader, node: yaml.Node) -> str:
    return str(node.value)


_FileLoader.add_constructor("tag:yaml.org,2002:float", _as_written)


class DataFileError(ValueError):
    """A data file (a snapshot) cannot be read or is neither JSON nor YAML; the message says which."""


def read_data_file(path: str) -> Any:
    """The data of a JSON or YAML file (JSON first: it is the faster parser)."""
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise DataFileError(f"cannot read: {exc.strerror}") from None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:
            return yaml.load(raw, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        except yaml.YAMLError as exc:
            raise DataFileError(f"neither JSON nor YAML: {' '.join(str(exc).split())}") from None


def _read_config_file(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.load(fh, Loader=_FileLoader) or {}  # a SafeLoader
    except OSError as exc:
        raise ConfigError(f"--config {path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--config {path}: not valid YAML/JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"--config {path}: must hold a mapping of setting names to values")
    return {str(k).replace("-", "_"): v for k, v in data.items()}


def load(
    cls: type[T], args: argparse.Namespace | Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None, *, shared_with: type | None = None
) -> T:
    """Build `cls` from flags (highest), environment, config file, defaults (lowest).

    `shared_with`: a settings class whose file `cls` may read too (`plan` reads the reconciler's
    ConfigMap); its other keys are ignored instead of refused."""
    environ = os.environ if environ is None else environ
    given = vars(args) if isinstance(args, argparse.Namespace) else dict(args or {})
    config_path = given.get("_config_file") or environ.get(ENV_PREFIX + "CONFIG")
    from_file = _read_config_file(config_path) if config_path else {}
    known = {f.name for f in _settings_fields(cls)} | ({f.name for f in _settings_fields(shared_with)} if shared_with else set())
    unknown = sorted(set(from_file) - known)
    if unknown:
        raise ConfigError(f"--config {config_path}: unknown setting(s) {', '.join(unknown)}")
    values: dict[str, Any] = {}
    for f in _settings_fields(cls):
        parse = f.metadata["parse"]
        if given.get(f.name) is not None:
            raw, source = given[f.name], flag_of(f)
        elif env_of(f) in environ:
            raw, source = environ[env_of(f)], env_of(f)
        elif f.name in from_file:
            raw, source = from_file[f.name], f"{f.name} in {config_path}"
        else:
            continue
        if isinstance(raw, bool):
            raw = "true" if raw else "false"
        try:
            values[f.name] = parse(raw if isinstance(raw, (list, tuple)) else str(raw))
        except ValueError as exc:
            raise ConfigError(f"{source}: invalid value {str(raw)!r}: {exc}") from None
    settings = compose(cls, **values)
    # Each concern checks its own fields across fields (`check` in the group's class body).
    for name, g in groups_of(cls):
        own_check = g.__dict__.get("check")
        if own_check is not None:
            own_check(getattr(settings, name) if name else settings)
    return settings


def settings_table(cls: type) -> list[tuple[str, str, str, str]]:
    """(flag, variable, default, help) rows for a command's table in docs/configuration.md."""
    return [(flag_of(f), env_of(f), describe_default(f), f.metadata["help"]) for f in _settings_fields(cls)]


def settings_groups(cls: type) -> list[tuple[type, list[tuple[str, str, str, str]]]]:
    """The concerns a command's settings are composed of, each with its own rows (docs/configuration.md)."""
    return [(g, settings_table(g)) for _, g in groups_of(cls) if settings_table(g)]


# ---- the groups more than one command composes ------------------------------------------------
#
# A command's settings class holds one field per concern (`group(...)`), and each group lives with
# the code that reads it: the rules' in webhook/policies/settings.py, the certificate's in
# webhook/certs/settings.py, `plan` and `reconcile`'s in webhook/scalein/settings.py, `audit`'s in
# webhook/audit/settings.py; `serve`'s settings are composed in webhook/servesettings.py, below
# every command, since `check`, `audit` and `smoke` read its file. Only the groups of no single
# package are declared here.


@dataclass(frozen=True)
class KubeSettings:
    """How a command reaches the API server; read by webhook/kube/ for every command that needs it."""

    kubeconfig: str = setting("", str, "kubeconfig file (default: in-cluster, then $KUBECONFIG, then ~/.kube/config)")


@dataclass(frozen=True)
class KubernetesVersionSettings:
    """Which Kubernetes minor's API server a judgement mirrors; `serve`, `check`, `audit` and `smoke` share it."""

    kubernetes_version: KubeVersion | str = setting(
        AUTO,
        parse_kubernetes_version,
        "the Kubernetes minor whose API server is mirrored (Pod validation and defaults, feature gates, check's built-in "
        "schemas): X.Y, at least 1.28, or auto = serve, audit and smoke read the API server's /version (the newest "
        "supported version when it cannot be read), check takes the newest supported",
        metavar="auto|X.Y",
    )
    feature_gates: tuple[tuple[str, bool], ...] = setting(
        (),
        parse_feature_gates,
        "the feature gates the cluster's kube-apiserver sets with its own --feature-gates (Name=true,Other=false); "
        "the others are at the release's defaults. A name the cluster's release does not know is refused",
        metavar="Name=bool,...",
    )

    def check(self) -> None:
        """A gate the named release does not know: the one-line start-up error (with `auto`, the
        release is checked once /version is read: `unknown_gates`)."""
        if isinstance(self.kubernetes_version, KubeVersion):
            problem = not_at(self.feature_gates, self.kubernetes_version)
            if problem:
                raise ConfigError(f"--feature-gates: {problem}")


@dataclass(frozen=True)
class CrdSettings:
    """The CRD files `check` validates against; `version` reads the same setting to say which are in use."""

    crds: tuple[str, ...] = setting(
        (),
        path_list,
        "CRD file or folder (a Kthena chart's crds/, a checkout) whose CRDs check validates against, over the cluster's "
        "(--kubeconfig) or the cache's (crds refresh); repeatable, the last given wins for a kind; the variable separates paths with :",
        metavar="PATH",
        repeat=True,
    )


@dataclass(frozen=True)
class LogSettings:
    """Logging: one JSON object per line on stderr."""

    log_level: str = setting("info", choice("debug", "info", "warning", "error"), "log level")


def parse_command(
    cls: type[T],
    argv: Sequence[str],
    prog: str,
    description: str,
    *,
    extra: Callable[[argparse.ArgumentParser], None] | None = None,
    shared_with: type | None = None,
) -> tuple[T, argparse.Namespace]:
    """The one way a command reads its settings: its own arguments (`extra`), then the settings."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    if extra is not None:
        extra(parser)
    add_arguments(parser, cls)
    args = parser.parse_args(list(argv))
    return load(cls, args, shared_with=shared_with), args


def parse_args(cls: type[T], argv: Sequence[str], prog: str, description: str) -> T:
    return parse_command(cls, argv, prog, description)[0]
