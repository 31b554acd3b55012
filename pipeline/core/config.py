"""Configuration: one documented table, loaded from TOML, validated at load, passed explicitly.

Every setting is a field of a frozen dataclass with its default and a one-line help text
(``field(metadata={"help": ...})``). ``configs/pipeline.toml`` mirrors these tables; the
settings tables of ``docs/operations.md`` are generated from :func:`settings_table`
(``make docs``, checked by ``make lint``). Command-line flags override the file with
:func:`dataclasses.replace`.
"""

from __future__ import annotations

import codecs
import dataclasses
import json
import re
import tomllib
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypeVar, get_args, get_origin, get_type_hints

import phonenumbers

from pipeline.core.errors import ConfigError
from pipeline.core.files.encodings import DEFAULT_MARGIN

T = TypeVar("T")

# Closed sets of values: a setting typed with one of these accepts nothing else.
VerifyMode = Literal["none", "smtp", "api"]


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


def known_region(code: str, where: str = "contacts.region") -> str:
    """*code* as an ISO 3166-1 alpha-2 country phonenumbers knows (upper case), or ConfigError."""
    region = code.upper()
    if region not in phonenumbers.SUPPORTED_REGIONS:
        raise ConfigError(
            f"{where} {code!r} is no country phonenumbers knows. "
            "Use an ISO 3166-1 alpha-2 code such as US or GB."
        )
    return region


@dataclass(frozen=True)
class DnsConfig:
    nameservers: tuple[str, ...] = setting(
        (), "Resolvers as HOST or HOST:PORT; empty uses the system's resolver."
    )
    timeout: float = setting(2.0, "Seconds to wait for one DNS answer.", minimum=0.01)
    attempts: int = setting(3, "Tries per query on SERVFAIL/timeout before the domain is Risky.")
    backoff: float = setting(
        0.5, "Seconds before the first retry; doubles on each further retry.", minimum=0
    )
    concurrency: int = setting(200, "Domains resolved at the same time.")
    canaries: tuple[str, ...] = setting(
        ("gmail.com", "outlook.com", "yahoo.com"),
        "Well-known mail domains the resolver must resolve before its answers are trusted.",
    )


@dataclass(frozen=True)
class CacheConfig:
    dir: str = setting("", "Directory of the domain cache; empty uses the user's cache directory.")
    ttl_good: int = setting(7 * 86400, "Seconds a domain with working mail DNS stays cached.")
    ttl_negative: int = setting(
        86400, "Seconds an NXDOMAIN / null MX / no-mail-host answer stays cached."
    )
    ttl_temporary: int = setting(600, "Seconds a SERVFAIL or timeout stays cached.")


@dataclass(frozen=True)
class ListsConfig:
    extra_disposable: tuple[str, ...] = setting(
        (), "Domains treated as disposable on top of the shipped list."
    )
    extra_free: tuple[str, ...] = setting(
        (), "Domains treated as free providers on top of the shipped list."
    )


@dataclass(frozen=True)
class VerifyConfig:
    # A Literal is as immutable as a str; ruff cannot see through the alias.
    mode: VerifyMode = setting(  # noqa: RUF009
        "none", "Address-level checks: none (domain level only), smtp or api."
    )
    port: int = setting(25, "TCP port of the mail servers probed.")
    helo: str = setting("", "Name sent in EHLO; empty: this machine's fully qualified name.")
    mail_from: str = setting("", "Envelope sender of probes; empty: postmaster@<helo name>.")
    timeout: float = setting(20.0, "Seconds to wait for a mail server's reply.", minimum=0.01)
    budget: int = setting(0, "Most RCPTs one run may send; 0: no limit.", minimum=0)
    sessions_per_host: int = setting(2, "SMTP sessions open at once to one mail host.")
    rcpts_per_session: int = setting(20, "Recipients asked in one session before a new one.")
    rcpts_per_minute_per_host: int = setting(120, "RCPTs per minute to one mail host.")
    rcpts_per_minute_per_provider: int = setting(
        300, "RCPTs per minute to one provider (all hosts under one registrable domain)."
    )
    greylist_delays: tuple[float, ...] = setting(
        (60.0, 300.0, 900.0), "Seconds after which deferred (greylisted) addresses are retried."
    )
    backoff: float = setting(30.0, "Seconds a host rests after a 421 or 4.7.x; doubles.", 0)
    breaker_threshold: int = setting(3, "Policy refusals in a row that stop probing a host.")
    unverifiable_providers: tuple[str, ...] = setting(
        ("yahoodns.net",),
        "Mail-host domains that accept every RCPT: their addresses are not probed.",
    )
    ttl_good: int = setting(30 * 86400, "Seconds a mailbox answer (exists / does not) is kept.")
    ttl_temporary: int = setting(3600, "Seconds a blocked / timed-out / greylisted answer is kept.")


@dataclass(frozen=True)
class ApiConfig:
    url: str = setting("", "Base URL of the remote verification service (--api-url).")
    quota: int = setting(
        0, "Requests the API key may make per UTC month; 0: learn it from the headers.", 0
    )
    concurrency: int = setting(8, "Requests in flight at once (--concurrency).")
    timeout: float = setting(30.0, "Seconds to wait for one answer.", minimum=0.01)
    retries: int = setting(3, "Extra tries after a 5xx or a connection failure.", minimum=0)
    backoff: float = setting(1.0, "Seconds of the first retry's wait ceiling; doubles.", 0)
    horizon: float = setting(
        3600.0, "Longest wait a run accepts for a 429's Retry-After before it stops.", 0
    )


@dataclass(frozen=True)
class BouncesConfig:
    soft_threshold: int = setting(
        3,
        "Soft bounces since the latest delivery, within soft_window_days, that make an "
        "address suspected.",
    )
    soft_window_days: int = setting(90, "Days a soft bounce counts towards soft_threshold.")
    domain_min_addresses: int = setting(
        10, "Known bounces a domain needs before its bounce rate can flag its addresses."
    )
    domain_hard_rate: float = setting(
        0.5,
        "Share of a domain's addresses in the ledger that must be known bounces "
        "for all its addresses to be suspected.",
        minimum=0,
    )
    db: str = setting(
        "",
        "The bounce ledger: a SQLite file or a postgresql:// URL; empty: bounces.sqlite in the "
        "cache (under serve with a database URL: that database).",
    )


@dataclass(frozen=True)
class ContactsConfig:
    db: str = setting(
        "",
        "The contact store: a SQLite file or a postgresql:// URL; empty: contacts.sqlite in the "
        "cache (under serve with a database URL: that database).",
    )
    region: str = setting(
        "US",
        "Country (ISO 3166-1 alpha-2) of numbers without a +country code where nothing says "
        "otherwise: imported rows without a country, numbers given to suppress and erase.",
        check=known_region,
    )
    retention_days: int = setting(365, "Days a lookup's audit record is kept.")


def _codec(name: str, where: str) -> str:
    if not name:
        return name
    try:
        return codecs.lookup(name.strip()).name
    except LookupError:
        raise ConfigError(
            f"{where}: {name!r} is not an encoding Python knows (write cp1252, cp1251, cp932, "
            "utf-8...; empty: detect it)."
        ) from None


@dataclass(frozen=True)
class InputConfig:
    encoding: str = setting(
        "",
        "Encoding of text inputs (--encoding): cp1252, cp1251, cp932, utf-8...; empty: "
        "UTF-8 and UTF-16 by their own rules, else the Excel code page detected.",
        check=_codec,
    )
    encoding_margin: float = setting(
        DEFAULT_MARGIN,
        "Least score lead of the detected code page over the next one that spells the text "
        "differently; closer than this, the file is refused as unsure (say --encoding).",
        minimum=0,
    )


@dataclass(frozen=True)
class RunConfig:
    memory: int = setting(
        1024,
        "MiB a clean run aims to stay within (--memory); sets how many rows a batch holds. "
        "Lists of any length pass through batches of this size.",
        minimum=64,
    )
    progress_every: float = setting(
        30.0,
        "Seconds between progress lines when standard error is not a terminal (a log); "
        "0: none. On a terminal, progress bars.",
        minimum=0,
    )


def share(value: float, where: str) -> float:
    """*value* as a share of a whole: at most 1."""
    if value > 1:
        raise ConfigError(f"{where} is a share (0 to 1, e.g. 0.1 for 10%), got {value!r}.")
    return value


@dataclass(frozen=True)
class ReadConfig:
    # A decompression bomb packs far better than any list: CSV exports pack 4-10 times with
    # gzip, bzip2 or Zstandard, and even mostly-empty columns stay under 100; runs of one byte
    # pack 1,000 (gzip) to a million times (bzip2). 100 is Apache POI's limit for the parts
    # of an Office file (ZipSecureFile, minimum inflate ratio 0.01).
    max_unpack_ratio: float = setting(
        100.0,
        "Times its own size a gzip, bzip2 or Zstandard input, a zip archive or an Excel workbook "
        "may expand to (checked once 16 MiB have come out); 0: no limit.",
        minimum=0,
    )
    max_unpacked_bytes: int = setting(
        16 * 2**30,
        "Bytes a packed input (gzip, bzip2, Zstandard, zip, xlsx) may expand to; 0: no limit.",
        minimum=0,
    )
    max_unpack_disk_share: float = setting(
        0.1,
        "Share of the disk space free under the work folder (when the run starts) that "
        "unpacking an input may fill; 0: no limit.",
        minimum=0,
        check=share,
    )
    max_field_bytes: int = setting(
        16 * 2**20,
        "Bytes one CSV field may hold (quotes included); a record with a longer field goes to "
        "the rejects as field_too_long, unread; 0: no limit.",
        minimum=0,
    )


@dataclass(frozen=True)
class StorageConfig:
    endpoint_url: str = setting(
        "",
        "Endpoint of an S3-compatible object store for s3:// inputs and outputs (MinIO, Ceph, "
        "R2); empty: AWS. Credentials come from the usual AWS_* settings.",
    )


@dataclass(frozen=True)
class Config:
    run: RunConfig = field(default_factory=RunConfig)
    input: InputConfig = field(default_factory=InputConfig)
    read: ReadConfig = field(default_factory=ReadConfig)
    storage: StorageConfig = field(default_factory=StorageConfig)
    dns: DnsConfig = field(default_factory=DnsConfig)
    cache: CacheConfig = field(default_factory=CacheConfig)
    lists: ListsConfig = field(default_factory=ListsConfig)
    verify: VerifyConfig = field(default_factory=VerifyConfig)
    api: ApiConfig = field(default_factory=ApiConfig)
    bounces: BouncesConfig = field(default_factory=BouncesConfig)
    contacts: ContactsConfig = field(default_factory=ContactsConfig)


def load_config(
    path: Path | None, env: Mapping[str, str] | None = None, known: frozenset[str] = frozenset()
) -> Config:
    """Read *path* (TOML) over the defaults (``None``: the defaults), then the settings that
    *env* gives as ``LISTCLEAN_<SECTION>_<KEY>`` variables over those (*known*: the names of
    other commands' settings, which this one ignores)."""
    config = Config() if path is None else build(Config, load_toml(path), str(path))
    return with_environment(config, env or {}, known=known)


ENV_PREFIX: Final = "LISTCLEAN_"
# Variables of ours that are not settings (a secret is never a setting: it is not in files).
NOT_SETTINGS: Final = frozenset({"LISTCLEAN_API_KEY"})


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
    return frozenset(var for var, _ in _env_slots(cls, prefix))


def with_environment(
    config: T, env: Mapping[str, str], prefix: str = ENV_PREFIX, known: frozenset[str] = frozenset()
) -> T:
    """*config* (a tree of setting tables) with every ``LISTCLEAN_<SECTION>_<KEY>`` of *env*
    applied. A ``LISTCLEAN_`` variable that no setting has (and that is not in *known*) is
    refused, naming it, like an unknown key in a file."""
    slots = dict(_env_slots(type(config), prefix))
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
    value = _coerce(raw, kind, metadata.get("minimum", 1), var)
    check = metadata.get("check")
    return check(value, var) if check else value


def _replaced(config: T, path: tuple[str, ...], value: Any) -> T:
    head, *rest = path
    inner = value if not rest else _replaced(getattr(config, head), tuple(rest), value)
    return dataclasses.replace(config, **{head: inner})  # type: ignore[type-var]


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
            value = _coerce(raw, kind, metadata.get("minimum", 1), f"{where}: {name}")
            check = metadata.get("check")
            values[name] = check(value, f"{where}: {name}") if check else value
    return cls(**values)


def _coerce(raw: Any, kind: Any, minimum: float, where: str) -> Any:
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
    number = isinstance(raw, int | float) and not isinstance(raw, bool)
    if (kind is float and number) or (kind is int and isinstance(raw, int) and number):
        if raw < minimum:
            raise ConfigError(f"{where} must be at least {minimum}, got {raw!r}.")
        return kind(raw)
    if kind is str and isinstance(raw, str):
        return raw
    raise ConfigError(f"{where} must be of type {kind.__name__}, got {raw!r}.")


def settings_table(cls: type[Any] = Config, prefix: str = "") -> Iterator[tuple[str, Any, str]]:
    """Yield (dotted name, default, help) for every setting, for the docs and ``--help``."""
    for f in dataclasses.fields(cls):
        default = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        if dataclasses.is_dataclass(default):
            yield from settings_table(type(default), f"{prefix}{f.name}.")
        else:
            yield f"{prefix}{f.name}", default, f.metadata.get("help", "")


def markdown_table(rows: Iterable[tuple[str, Any, str]]) -> str:
    """*rows* of :func:`settings_table` as the docs' Markdown table, defaults in TOML."""
    lines = ["| setting | default | meaning |", "|---|---|---|"]
    lines += [f"| `{name}` | `{json.dumps(default)}` | {text} |" for name, default, text in rows]
    return "\n".join(lines)
