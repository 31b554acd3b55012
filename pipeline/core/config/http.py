"""The service's own setting tables: ``[service]`` (read from ``LISTCLEAN_HTTP_*``) and
``[anonymous]`` (``LISTCLEAN_ANONYMOUS_*``). The engine's are :mod:`.tables`; the plans and the
whole service config are the service's (:mod:`pipeline.service.settings`)."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Final

from pipeline.core.config.rules import ENV_PREFIX, setting
from pipeline.core.errors import ConfigError

# The [service] table's variables: LISTCLEAN_HTTP_HOST, LISTCLEAN_HTTP_PORT... Its section's
# own name would give LISTCLEAN_SERVICE_HOST and LISTCLEAN_SERVICE_PORT, which Kubernetes sets
# for a Service named "listclean" (see pipeline.core.config.is_service_link).
HTTP_PREFIX = f"{ENV_PREFIX}HTTP_"


def _proxies(proxies: tuple[str, ...], where: str) -> tuple[str, ...]:
    for proxy in proxies:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError as exc:
            raise ConfigError(
                f"{where}: trusted_proxies entry {proxy!r} is not an IP address or network "
                "(write 10.0.0.5 or 10.0.0.0/8)."
            ) from exc
    return proxies


@dataclass(frozen=True)
class HttpConfig:
    host: str = setting("127.0.0.1", "Address to listen on.")
    port: int = setting(8080, "TCP port to listen on.", minimum=0)
    db: str = setting(
        "",
        "Keys and quota counters: a SQLite file, or a postgresql:// URL that several instances "
        "share (the contact store and bounce ledger then live there too); empty: a file in the "
        "user data directory.",
    )
    trusted_proxies: tuple[str, ...] = setting(
        (), "Proxy addresses or networks whose X-Forwarded-For is believed.", check=_proxies
    )
    max_value_length: int = setting(512, "Longest accepted parameter value, in characters.")
    max_parameters: int = setting(
        16, "Most parameters one request may carry in its query string, and in its body."
    )
    auth_failures: int = setting(
        20,
        "Failed authentications one client address (an IPv6 /64) may make within auth_window "
        "before its failures are answered 429.",
    )
    auth_window: float = setting(
        60.0, "Seconds over which a client address's failed authentications are counted."
    )
    header_timeout: float = setting(
        10.0,
        "Seconds a client has to send a request's line and headers, from its connection (or "
        "the first byte of its next request on a kept-alive one); then 408 and the connection "
        "closes.",
        minimum=0.01,
    )
    body_timeout: float = setting(
        30.0,
        "Seconds a client has, once its headers are in, to send the whole body of an /api/ "
        "request; then 408. Upload routes bound their bodies by a transfer rate instead.",
        minimum=0.01,
    )
    max_unfinished_per_client: int = setting(
        512,
        "Connections one client address (an IPv4 address, an IPv6 /64) may hold that have not "
        "finished sending a request; one more is answered 503. A trusted proxy's connections "
        "count only toward max_unfinished_total; finished, kept-alive ones never count.",
    )
    max_unfinished_total: int = setting(
        4096,
        "Connections of all clients that have not finished sending a request; one more is "
        "answered 503. Kept below three quarters of the open-file limit read at start.",
    )
    flood_log_interval: float = setting(
        10.0,
        "Seconds between the counted log lines that report refused and cut-off connections.",
        minimum=0.01,
    )
    resolver_check_interval: float = setting(
        30.0, "Seconds between health checks of the resolver (canaries) while serving."
    )
    shutdown_timeout: float = setting(10.0, "Seconds in-flight requests get to finish on stop.")
    batch_size: int = setting(256, "Most addresses verified together in one engine pass.")
    batch_wait: float = setting(
        0.005,
        "Seconds the first request of a batch waits for others to share its engine pass.",
        minimum=0,
    )
    batch_quiet: float = setting(
        0.001,
        "Seconds without a new request after which a batch leaves before batch_wait is up.",
        minimum=0,
    )


@dataclass(frozen=True)
class AnonymousConfig:
    email_per_day: int = setting(1, "/api/email requests per client IP per UTC day without a key.")
    find_per_day: int = setting(1, "/api/find requests per client IP per UTC day without a key.")


ANONYMOUS_PREFIX: Final = f"{ENV_PREFIX}ANONYMOUS_"


def _callbacks(value: str, where: str) -> str:
    if value not in CALLBACK_REACH:
        raise ConfigError(f"{where} must be one of {', '.join(CALLBACK_REACH)}, got {value!r}.")
    return value


# Where a job's completion callback may go: nowhere, public addresses only, or anywhere
# (loopback and private networks included: a test, or a service inside one network).
CALLBACK_REACH: Final = ("off", "public", "any")


@dataclass(frozen=True)
class JobsConfig:
    storage: str = setting(
        "",
        "Where bulk jobs keep their files: a folder every instance of one host reaches, or an "
        "s3:// URL for instances on several hosts; empty: a jobs folder beside the service "
        "database file (or in the user data directory).",
    )
    cores: int = setting(
        0,
        "CPU cores the jobs of one instance may use (their processes are pinned to them and run "
        "at a lower priority); 0: all cores but one.",
        minimum=0,
    )
    at_once: int = setting(1, "Jobs one instance runs at the same time.")
    nice: int = setting(
        19, "How much lower the jobs' processes run than the service (nice; 19: the lowest).", 0
    )
    max_upload_bytes: int = setting(
        2 * 2**30, "Largest list a job takes, in bytes as uploaded; more is a 413."
    )
    max_rows: int = setting(10_000_000, "Most rows one job may hold; more is a 413.")
    min_upload_rate: int = setting(
        16 * 1024,
        "Bytes a second an upload must keep up, measured over each upload_window; slower is a "
        "408 (uploads have no fixed body timeout).",
    )
    upload_window: float = setting(
        10.0, "Seconds over which an upload's transfer rate is measured.", minimum=0.1
    )
    retention: float = setting(
        7 * 86400.0, "Seconds a finished job and its files are kept; then both are removed."
    )
    link_ttl: float = setting(
        900.0, "Seconds a download link (a token made for one file of one job) stays valid."
    )
    lease: float = setting(
        30.0,
        "Seconds without a heartbeat after which a running job is taken to have lost its "
        "instance and is queued again (a restart, a crash).",
        minimum=0.1,
    )
    poll: float = setting(
        1.0, "Seconds between an instance's looks for queued jobs and cancels.", minimum=0.01
    )
    callbacks: str = setting(
        "public",
        "Where completion callbacks may go: off, public (addresses on the internet only), or "
        "any (loopback and private networks too).",
        check=_callbacks,
    )


JOBS_PREFIX: Final = f"{ENV_PREFIX}JOBS_"
