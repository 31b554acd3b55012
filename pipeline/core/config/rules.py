"""How a setting is declared, read from TOML and checked: :func:`setting` for a field,
:func:`build` for a table, and the Markdown table of every setting (``make docs``)."""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import field
from pathlib import Path
from typing import Any, Final, Literal, TypeVar, get_args, get_origin, get_type_hints

from pipeline.core.errors import ConfigError

T = TypeVar("T")

ENV_PREFIX: Final = "LISTCLEAN_"  # a setting's variable: LISTCLEAN_<SECTION>_<KEY>


def setting(
    default: Any,
    help: str,
    minimum: float = 1,
    check: Callable[[Any, str], Any] | None = None,
) -> Any:
    """A config field: its default, its help line, for numbers the least value allowed, and
    for values with rules of their own a *check* (value, where) that returns the value to keep
    or raises :class:`ConfigError`."""
    metadata = {"help": help, "minimum": minimum, "check": check}
    if isinstance(default, list | tuple):
        return field(default=tuple(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def load_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(
            f"Cannot read config file {path}: {exc.strerror}. Check the path."
        ) from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"Config file {path} is not valid TOML: {exc}. Fix the syntax.") from exc


def build(cls: type[T], data: Mapping[str, Any], where: str) -> T:
    """An instance of the config dataclass *cls* from a TOML table, validated field by field."""
    if not isinstance(data, dict):
        raise ConfigError(f"{where} must be a table.")
    fields = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(
            f"{where}: unknown setting {unknown[0]!r}; "
            f"known settings are {', '.join(sorted(fields))}."
        )
    hints = get_type_hints(cls)
    values: dict[str, Any] = {}
    for name, raw in data.items():
        kind = hints[name]
        if dataclasses.is_dataclass(kind):
            values[name] = build(kind, raw, f"{where} [{name}]")  # type: ignore[arg-type]
        else:
            metadata = fields[name].metadata
            value = coerce(raw, kind, metadata.get("minimum", 1), f"{where}: {name}")
            check = metadata.get("check")
            values[name] = check(value, f"{where}: {name}") if check else value
    return cls(**values)


def coerce(raw: Any, kind: Any, minimum: float, where: str) -> Any:
    if get_origin(kind) is Literal:
        allowed = get_args(kind)
        if raw not in allowed:
            listing = ", ".join(repr(a) for a in allowed)
            raise ConfigError(f"{where} must be one of {listing}, got {raw!r}.")
        return raw
    if kind == tuple[str, ...]:
        if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
            raise ConfigError(f"{where} must be a list of strings, got {raw!r}.")
        return tuple(raw)
    if kind == tuple[float, ...]:
        numbers = isinstance(raw, list) and all(
            isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in raw
        )
        if not numbers:
            raise ConfigError(f"{where} must be a list of non-negative numbers, got {raw!r}.")
        return tuple(float(v) for v in raw)
    if kind is bool:
        if not isinstance(raw, bool):
            raise ConfigError(f"{where} must be true or false, got {raw!r}.")
        return raw
    number = isinstance(raw, int | float) and not isinstance(raw, bool)
    if (kind is float and number) or (kind is int and isinstance(raw, int) and number):
        if raw < minimum:
            raise ConfigError(f"{where} must be at least {minimum}, got {raw!r}.")
        return kind(raw)
    if kind is str and isinstance(raw, str):
        return raw
    raise ConfigError(f"{where} must be of type {kind.__name__}, got {raw!r}.")
