"""The engine's setting tables: one frozen dataclass a section, each field with its default
and a one-line help text. ``configs/pipeline.toml`` mirrors them, and the docs' settings tables
are drawn from them (:func:`settings_table`, :func:`markdown_table`)."""

from __future__ import annotations

import codecs
import dataclasses
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from pipeline.core.config.rules import setting
from pipeline.core.errors import ConfigError
from pipeline.core.files.encodings import DEFAULT_MARGIN

# Closed sets of values: a setting typed with one of these accepts nothing else.
VerifyMode = Literal[
    "none", "smtp", "api", "zerobounce", "neverbounce", "kickbox", "emailable", "bouncer"
]
# The paid verifiers a method may name (pipeline.core.mailboxes.vendors): each sends addresses
# to a third party, which bills for them.
VENDORS: tuple[str, ...] = ("zerobounce", "neverbounce", "kickbox", "emailable", "bouncer")
METHODS: tuple[str, ...] = ("smtp", "api", *VENDORS)  # what a route or a budget may name


def known_region(code: str, where: str = "contacts.region") -> str:
    """*code* as an ISO 3166-1 alpha-2 country phonenumbers knows (upper case), or ConfigError."""
    import phonenumbers  # here: the command line's parser imports the settings' names

    region = code.upper()
    if region not in phonenumbers.SUPPORTED_REGIONS:
        raise ConfigError(
            f"{where} {code!r} is no country phonenumbers knows. "
            "Use an ISO 3166-1 alpha-2 code such as US or GB."
        )
    return region


def share(value: float, where: str) -> float:
    """*value* as a share of a whole: at most 1."""
    if value > 1:
        raise ConfigError(f"{where} is a share (0 to 1, e.g. 0.1 for 10%), got {value!r}.")
    return value


@dataclass(frozen=True)
class DnsConfig:
    nameservers: tuple[str, ...] = setting(
        (), "Resolvers as HOST or HOST:PORT; empty uses the system's resolver."
    )
    timeout: float = setting(
        2.0,
        "Seconds to wait for one DNS answer; within them the query may be sent again.",
        minimum=0.01,
    )
    attempts: int = setting(3, "Tries per query on SERVFAIL/timeout before the domain is Risky.")
    backoff: float = setting(
        0.5, "Seconds before the first retry; doubles on each further retry.", minimum=0
    )
    concurrency: int = setting(
        200, "Domains resolved at the same time, in the whole run (Dask workers share it)."
    )
    canaries: tuple[str, ...] = setting(
        ("gmail.com", "outlook.com", "yahoo.com"),
        "Well-known mail domains the resolver must resolve before its answers are trusted.",
    )


def _url_of(value: str, where: str, schemes: tuple[str, ...]) -> str:
    if value and not value.startswith(schemes):
        shown = ", ".join(schemes)
        raise ConfigError(f"{where} must be empty or a URL ({shown}...), got {value!r}.")
    return value


@dataclass(frozen=True)
class CacheConfig:
    dir: str = setting("", "Directory of the domain cache; empty uses the user's cache directory.")
    ttl_good: int = setting(7 * 86400, "Seconds a domain with working mail DNS stays cached.")
    ttl_negative: int = setting(
        86400, "Seconds an NXDOMAIN / null MX / no-mail-host answer stays cached."
    )
    ttl_temporary: int = setting(600, "Seconds a SERVFAIL or timeout stays cached.")
    db: str = setting(
        "",
        "The domain cache and the mailbox cache: a postgresql:// URL every host and every Dask "
        "worker shares; empty: domains.sqlite and mailboxes.sqlite in the cache directory.",
        check=lambda value, where: _url_of(value, where, ("postgresql://", "postgres://")),
    )
    shared: str = setting(
        "",
        "Where a Dask run's workers keep the caches when db names no database: a folder every "
        "worker reaches, file:///shared/path or s3://bucket/prefix; empty: .listclean-cache/ "
        "beside the output.",
        check=lambda value, where: _url_of(value, where, ("file:///", "s3://")),
    )


@dataclass(frozen=True)
class ListsConfig:
    extra_disposable: tuple[str, ...] = setting(
        (), "Domains treated as disposable on top of the shipped list."
    )
    extra_free: tuple[str, ...] = setting(
        (), "Domains treated as free providers on top of the shipped list."
    )
    extra_legitimate: tuple[str, ...] = setting(
        (), "Real domains never suggested a provider, on top of the shipped near-provider list."
    )


@dataclass(frozen=True)
class VerifyConfig:
    # A Literal is as immutable as a str; ruff cannot see through the alias.
    mode: VerifyMode = setting(  # noqa: RUF009
        "none",
        "Address-level checks: none (domain level only), smtp, api, or a paid verifier: "
        "zerobounce, neverbounce, kickbox, emailable, bouncer.",
    )
    port: int = setting(25, "TCP port of the mail servers probed.")
    helo: str = setting("", "Name sent in EHLO; empty: this machine's fully qualified name.")
    mail_from: str = setting("", "Envelope sender of probes; empty: postmaster@<helo name>.")
    timeout: float = setting(20.0, "Seconds to wait for a mail server's reply.", minimum=0.01)
    budget: int = setting(
        0, "Most RCPTs (or a paid verifier's credits) one run may spend; 0: no limit.", minimum=0
    )
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
    ttl_floor: float = setting(
        0.5,
        "Shortest lifetime of a kept address answer (SMTP, API or a paid verifier's) as a share "
        "of its TTL: each answer gets a lifetime between ttl_floor x TTL and the TTL when it is "
        "learned, so answers learned in one night fall due over many; 1.0: the whole TTL.",
        minimum=0,
        check=share,
    )


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


def _pairs(entries: tuple[str, ...], where: str, left: str, right: str) -> list[tuple[str, str]]:
    """Entries written ``LEFT=RIGHT``, split, or ConfigError naming the one that is not."""
    pairs = []
    for entry in entries:
        name, sep, value = (part.strip() for part in entry.partition("="))
        if not (sep and name and value):
            raise ConfigError(f"{where}: {entry!r} is not written {left}={right}.")
        pairs.append((name.lower(), value))
    return pairs


def _method(name: str, where: str) -> str:
    if name not in METHODS:
        raise ConfigError(f"{where}: {name!r} is no method; write one of {', '.join(METHODS)}.")
    return name


def _vendor_urls(entries: tuple[str, ...], where: str) -> tuple[str, ...]:
    for vendor, _ in _pairs(entries, where, "VENDOR", "URL"):
        if vendor not in VENDORS:
            raise ConfigError(
                f"{where}: {vendor!r} is no vendor; write one of {', '.join(VENDORS)}."
            )
    return entries


def _routes(entries: tuple[str, ...], where: str) -> tuple[str, ...]:
    for _, method in _pairs(entries, where, "PROVIDER", "METHOD"):
        _method(method.lower(), where)
    return entries


def _budgets(entries: tuple[str, ...], where: str) -> tuple[str, ...]:
    for method, number in _pairs(entries, where, "METHOD", "N"):
        _method(method, where)
        if not number.isdigit():
            raise ConfigError(
                f"{where}: the budget of {method} must be a whole number, got {number!r}."
            )
    return entries


def routes_of(routing: RoutingConfig) -> dict[str, str]:
    """``[routing] routes`` as provider -> method."""
    return {provider: method.lower() for provider, method in _pairs(routing.routes, "", "", "")}


def budgets_of(routing: RoutingConfig) -> dict[str, int]:
    """``[routing] budgets`` as method -> most it may spend in a run (a later entry wins)."""
    return {method: int(n) for method, n in _pairs(routing.budgets, "", "", "")}


def vendor_url(config: VendorConfig, vendor: str, main: bool) -> str:
    """The base URL that stands in for *vendor*'s own ("": its documented hosts): ``urls``'s
    entry for it, else ``url`` when it is the run's main method."""
    named = dict(_pairs(config.urls, "", "", ""))
    return named.get(vendor, config.url if main else "")


@dataclass(frozen=True)
class VendorConfig:
    url: str = setting(
        "",
        "Base URL (scheme, host, port) standing in for the paid verifier's own hosts, its "
        "documented paths kept (--api-url with a vendor method); empty: the vendor's.",
    )
    urls: tuple[str, ...] = setting(
        (),
        'Base URLs of other vendors a route names, as "VENDOR=URL" (the regional host, a proxy).',
        check=_vendor_urls,
    )
    db: str = setting(
        "",
        "The paid-answer cache and its bulk jobs: a SQLite file or a postgresql:// URL every host "
        "shares; empty: vendor-answers.sqlite in the cache.",
    )
    ttl: int = setting(
        30 * 86400, "Seconds a paid answer about a mailbox is used instead of paying again."
    )
    ttl_unknown: int = setting(
        86400, "Seconds a paid answer that could not decide (unknown, greylisted, timeout) is used."
    )
    single_max: int = setting(
        100,
        "Most distinct addresses a run asks about one at a time; more go to the vendor's bulk API "
        "(NeverBounce: never more than 100, its usage guidelines).",
        minimum=0,
    )
    concurrency: int = setting(
        8, "Per-address requests in flight at once, within each vendor's published limit."
    )
    per_minute: int = setting(
        0, "Per-address requests a minute; 0: each vendor's published rate.", minimum=0
    )
    timeout: float = setting(60.0, "Seconds to wait for one answer from a vendor.", minimum=0.01)
    retries: int = setting(
        3, "Extra tries after a 5xx, a 429, a throttle or a connection failure.", minimum=0
    )
    backoff: float = setting(1.0, "Seconds of the first retry's wait ceiling; doubles.", 0)
    poll_interval: float = setting(15.0, "Seconds between status polls of a bulk job.", 0)
    job_timeout: float = setting(
        6 * 3600.0,
        "Seconds a run waits for a bulk job; then its rows keep their domain-level verdict and "
        "the next run collects the job (never submitted twice).",
        minimum=0,
    )


@dataclass(frozen=True)
class RoutingConfig:
    routes: tuple[str, ...] = setting(
        (),
        "Mail providers whose addresses go to another method than verify.mode, as "
        '"PROVIDER=METHOD" (google.com=zerobounce): PROVIDER is the registrable domain of the '
        "domain's mail host (google.com: Gmail and Google Workspace; outlook.com: Microsoft 365).",
        check=_routes,
    )
    budgets: tuple[str, ...] = setting(
        (),
        'Per-method budgets of a run, as "METHOD=N" (zerobounce=500, smtp=10000): credits for a '
        "vendor, RCPTs for smtp, requests for api (--budget METHOD=N).",
        check=_budgets,
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
class HistoryConfig:
    record: bool = setting(
        True,
        "Record each clean in the run history, to tell what changed since the list's last run; "
        "false: since_last_run is null and --changes holds only its header.",
    )
    list_name: str = setting(
        "",
        "The list's name in the run history (--list-name); empty: the input's file name without "
        "its date and time parts, so each night's export is one list.",
    )
    db: str = setting(
        "",
        "The run history: a SQLite file or a postgresql:// URL; empty: history.sqlite in the cache "
        "(sandbox-history.sqlite for --sandbox). With --engine dask the workers write it: a "
        "postgresql:// URL, or a file every worker reaches.",
    )
    retention_days: int = setting(
        180,
        "Days a run stays in the history (its addresses' VERDICT, REASON and SCORE); the run "
        "that just finished is always kept; 0: forever.",
        minimum=0,
    )


@dataclass(frozen=True)
class CalibrationConfig:
    min_sends: int = setting(
        200,
        "Sends (deliveries and hard bounces) a cell (a SCORE level, a REASON at it, or a "
        "provider's) needs before `listclean calibrate` maps it to its observed deliverability, "
        "and how hard a cell's rate is pulled toward its parent's; levels with fewer keep the "
        "default SCORE where the order allows.",
        minimum=1,
    )


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
        "Lists of any length pass through batches of this size. What the batches do not hold "
        "comes on top (the libraries, the last run's history, the reader's chunks), so a small "
        "value is exceeded.",
        minimum=64,
    )
    cores: int = setting(
        0,
        "Cores a clean run uses on this machine: batches normalized and decided at once, each "
        "holding its share of the memory; 0: every core the process may run on. Cap it on a "
        "shared machine or for the service's jobs.",
        minimum=0,
    )
    progress_every: float = setting(
        30.0,
        "Seconds between progress lines when standard error is not a terminal (a log); "
        "0: none. On a terminal, progress bars.",
        minimum=0,
    )


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
    vendor: VendorConfig = field(default_factory=VendorConfig)
    routing: RoutingConfig = field(default_factory=RoutingConfig)
    bounces: BouncesConfig = field(default_factory=BouncesConfig)
    contacts: ContactsConfig = field(default_factory=ContactsConfig)
    history: HistoryConfig = field(default_factory=HistoryConfig)
    calibration: CalibrationConfig = field(default_factory=CalibrationConfig)


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
