"""The settings as a process gets them: a file over the defaults, then ``LISTCLEAN_``
environment variables over those, and the one registry of every variable both fronts read.

The registry (:func:`setting_variables`) holds the engine's settings
(``LISTCLEAN_<SECTION>_<KEY>``), the service's (``LISTCLEAN_HTTP_*``, ``LISTCLEAN_ANONYMOUS_*``)
and the variables that are not settings (:data:`API_KEY`). A variable of ours that it does
not know is refused, naming it; one of the shapes Kubernetes injects for a Service named
``listclean…`` is a service link, ignored with one warning.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final, Literal, TypeVar, get_origin, get_type_hints

from pipeline.core.config.http import ANONYMOUS_PREFIX, HTTP_PREFIX, AnonymousConfig, HttpConfig
from pipeline.core.config.rules import ENV_PREFIX, build, coerce, load_toml
from pipeline.core.config.tables import VENDORS, Config
from pipeline.core.errors import ConfigError

T = TypeVar("T")

# Variables of ours that are not settings (a secret is never a setting: it is not in files).
API_KEY: Final = "LISTCLEAN_API_KEY"  # a secret is never a setting: it is not in files
# The key of a paid verifier that a route names beside the run's main method
# (LISTCLEAN_ZEROBOUNCE_API_KEY); the main method's is --api-key or LISTCLEAN_API_KEY.
VENDOR_KEYS: Final = {vendor: f"LISTCLEAN_{vendor.upper()}_API_KEY" for vendor in VENDORS}
NOT_SETTINGS: Final = frozenset({API_KEY, *VENDOR_KEYS.values()})


# Kubernetes gives every container variables for each Service of its namespace (unless the pod
# says enableServiceLinks: false), named after the Service: for "listclean-api",
# LISTCLEAN_API_SERVICE_HOST, LISTCLEAN_API_SERVICE_PORT[_<port name>],
# LISTCLEAN_API_PORT=tcp://10.0.0.11:8080 and LISTCLEAN_API_PORT_8080_TCP[_PROTO|_PORT|_ADDR]
# ("Services", Kubernetes documentation: Discovering services, Environment variables). Any of
# these shapes is a service link, not a setting: ignored, with a warning (service_links).
_SERVICE_LINK: Final = re.compile(
    r"LISTCLEAN(_[A-Z0-9_]+?)?_(SERVICE_HOST|SERVICE_PORT|PORT)(_\w+)?"
)
# What Kubernetes puts in <SERVICE>_PORT, where a setting of ours could have the same name
# (LISTCLEAN_VERIFY_PORT for a Service "listclean-verify"): a URL, never a port number.
_LINK_VALUE: Final = re.compile(r"(tcp|udp|sctp)://", re.IGNORECASE)
# Names of ours that Kubernetes now owns: the [service] table's variables are LISTCLEAN_HTTP_*.
RENAMED: Final = {"LISTCLEAN_SERVICE_": "LISTCLEAN_HTTP_"}


def is_service_link(name: str, value: str, settings: Iterable[str] = ()) -> bool:
    """Whether the variable *name* is one Kubernetes sets for a Service whose name starts with
    ``listclean`` rather than a setting (*settings*: the names that are settings)."""
    if not _SERVICE_LINK.fullmatch(name):
        return False
    return name not in settings or bool(_LINK_VALUE.match(value.strip()))


def service_links(env: Mapping[str, str], settings: Iterable[str]) -> list[str]:
    """The variables of *env* that are Kubernetes service links (see :func:`is_service_link`),
    in name order."""
    known = frozenset(settings)
    return sorted(var for var in env if is_service_link(var, env[var], known))


def service_link_warning(links: Iterable[str], settings: Iterable[str]) -> str:
    """The one warning for the service-link variables *links*, naming the variable that sets
    what an old name of ours did (LISTCLEAN_SERVICE_PORT: LISTCLEAN_HTTP_PORT)."""
    links = list(links)
    known = frozenset(settings)
    instead = [f"{var}: use {new}" for var in links if (new := renamed(var)) in known]
    said = f" ({'; '.join(instead)})" if instead else ""
    return (
        f"Ignored {', '.join(links)}: Kubernetes sets such variables for a Service whose name "
        f"starts with listclean (service links); they are not settings{said}. Set "
        "enableServiceLinks: false in the pod's spec to keep them out."
    )


def renamed(var: str) -> str:
    """The name a variable of an older release has now (itself when it was not renamed)."""
    for old, new in RENAMED.items():
        if var.startswith(old):
            return new + var.removeprefix(old)
    return var


def env_names(cls: type[Any], prefix: str = ENV_PREFIX) -> frozenset[str]:
    """The environment variables that set the settings of the table *cls*."""
    return frozenset(var for var, _ in _slot_table(cls, prefix))


def with_environment(
    config: T, env: Mapping[str, str], prefix: str = ENV_PREFIX, known: frozenset[str] = frozenset()
) -> T:
    """*config* (a tree of setting tables) with every ``LISTCLEAN_<SECTION>_<KEY>`` of *env*
    applied. A ``LISTCLEAN_`` variable that no setting has (and that is not in *known*) is
    refused, naming it, like an unknown key in a file."""
    slots = dict(_slot_table(type(config), prefix))
    settings = known | slots.keys()
    for var in sorted(env):
        if not var.startswith(ENV_PREFIX) or var in NOT_SETTINGS or var in known - slots.keys():
            continue
        if is_service_link(var, env[var], settings):
            continue  # Kubernetes's, not ours: the front warns once (service_links)
        if var not in slots:
            raise ConfigError(_unknown(var, settings))
        path, spec = slots[var]
        config = _replaced(config, path, _env_value(env[var], spec, var))
    return config


def _unknown(var: str, settings: Iterable[str]) -> str:
    if (new := renamed(var)) != var and new in settings:
        return f"The environment variable {var} is now named {new}: rename it."
    return (
        f"Unknown environment variable {var}: no setting has that name. Settings are "
        "LISTCLEAN_<SECTION>_<KEY> in upper case, e.g. LISTCLEAN_DNS_TIMEOUT."
    )


Slots = tuple[tuple[str, tuple[tuple[str, ...], Any]], ...]
_SLOT_TABLES: dict[tuple[type[Any], str], Slots] = {}


def _slot_table(cls: type[Any], prefix: str) -> Slots:
    """:func:`_env_slots` of a table, worked out once: the tables are classes, fixed at import
    (reading their type hints costs milliseconds, which a notebook's loop of calls would pay)."""
    key = (cls, prefix)
    if key not in _SLOT_TABLES:
        _SLOT_TABLES[key] = tuple(_env_slots(cls, prefix))
    return _SLOT_TABLES[key]


def _env_slots(cls: type[Any], prefix: str) -> Iterator[tuple[str, tuple[tuple[str, ...], Any]]]:
    hints = get_type_hints(cls)
    for f in dataclasses.fields(cls):
        kind = hints[f.name]
        if dataclasses.is_dataclass(kind):
            for var, (path, spec) in _env_slots(kind, f"{prefix}{f.name.upper()}_"):  # type: ignore[arg-type]
                yield var, ((f.name, *path), spec)
        elif "help" in f.metadata:
            yield f"{prefix}{f.name.upper()}", ((f.name,), (kind, f.metadata))


def _env_value(text: str, spec: tuple[Any, Mapping[str, Any]], var: str) -> Any:
    """A variable's text as the setting's type: TOML for numbers and lists ("1.5",
    '["a", "b"]'), and a plain comma-separated list for a list of strings ("a,b")."""
    kind, metadata = spec
    raw: Any = text
    if kind == tuple[str, ...] and not text.lstrip().startswith("["):
        raw = [part.strip() for part in text.split(",") if part.strip()]
    elif kind is not str and get_origin(kind) is not Literal:
        try:
            raw = tomllib.loads(f"value = {text}")["value"]
        except tomllib.TOMLDecodeError:
            raw = text  # refused below, with the variable's name
    value = coerce(raw, kind, metadata.get("minimum", 1), var)
    check = metadata.get("check")
    return check(value, var) if check else value


def _replaced(config: T, path: tuple[str, ...], value: Any) -> T:
    head, *rest = path
    inner = value if not rest else _replaced(getattr(config, head), tuple(rest), value)
    return dataclasses.replace(config, **{head: inner})  # type: ignore[type-var]


def load_config(
    path: Path | None, env: Mapping[str, str] | None = None, known: frozenset[str] = frozenset()
) -> Config:
    """Read *path* (TOML) over the defaults (``None``: the defaults), then the settings that
    *env* gives as ``LISTCLEAN_<SECTION>_<KEY>`` variables over those (*known*: the names of
    other commands' settings, which this one ignores)."""
    config = Config() if path is None else build(Config, load_toml(path), str(path))
    return with_environment(config, env or {}, known=known)


def setting_variables() -> frozenset[str]:
    """Every ``LISTCLEAN_`` variable that sets a setting: the engine's and the service's."""
    return (
        env_names(Config)
        | env_names(HttpConfig, HTTP_PREFIX)
        | env_names(AnonymousConfig, ANONYMOUS_PREFIX)
    )


def api_key(given: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The API key of ``--verify api``: *given* (a flag, a keyword), else ``LISTCLEAN_API_KEY``."""
    return given or (os.environ if env is None else env).get(API_KEY) or None


def method_keys(
    main: str, given: str | None = None, env: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The API key of each method that takes one: the run's *main* method's is *given*
    (``--api-key``), else ``LISTCLEAN_API_KEY``; every vendor's may also come from its own
    variable (``LISTCLEAN_KICKBOX_API_KEY``), which a route to a second vendor needs."""
    env = os.environ if env is None else env
    keys = {vendor: env[var] for vendor, var in VENDOR_KEYS.items() if env.get(var)}
    main_key = api_key(given, env)
    if main_key:
        keys[main] = main_key
    return keys


def cache_root(given: str | Path | None, config: Config) -> Path:
    """Where the caches and stores live: *given* (``--cache-dir``, a keyword), else ``[cache]
    dir``, else the user's cache folder (``~/.cache/listclean`` on Linux)."""
    import platformdirs  # here: the command line's parser imports the settings' names

    return Path(given or config.cache.dir or platformdirs.user_cache_dir("listclean"))
