"""Service settings: ``configs/service.toml`` = the engine's tables plus the service's own.

    [dns] [cache] [lists]    as in configs/pipeline.toml (the engine)
    [verify]                 mode = "smtp" makes /api/email probe mailboxes too (slow)
    [service]                host, port, database, trusted proxies, request limits
    [anonymous]              quotas of requests without a key (per client IP per UTC day)
    [plans.NAME]             quotas per UTC calendar month for keys on plan NAME

The built-in plans (default, starter, growth, scale) are always there; a ``[plans.NAME]`` table
overrides one of them or adds a new plan.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pipeline.core.config import (
    ENV_PREFIX,
    Config,
    build,
    env_names,
    load_toml,
    setting,
    with_environment,
)
from pipeline.core.db.postgres import is_url
from pipeline.core.errors import ConfigError

ENGINE_SECTIONS = ("dns", "cache", "lists", "verify", "api", "bounces", "contacts")
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


@dataclass(frozen=True)
class PlanConfig:
    email_per_month: int = setting(100, "/api/email requests per UTC calendar month.")
    find_per_month: int = setting(5, "/api/find requests per UTC calendar month.")
    burst_per_second: int = setting(0, "Requests per second per key; 0: no burst limit.", minimum=0)


BUILTIN_PLANS: Mapping[str, PlanConfig] = MappingProxyType(
    {
        "default": PlanConfig(100, 5),
        "starter": PlanConfig(10_000, 500),
        "growth": PlanConfig(100_000, 5_000),
        "scale": PlanConfig(1_000_000, 50_000),
    }
)


@dataclass(frozen=True)
class ServiceConfig:
    engine: Config = field(default_factory=Config)
    service: HttpConfig = field(default_factory=HttpConfig)
    anonymous: AnonymousConfig = field(default_factory=AnonymousConfig)
    plans: Mapping[str, PlanConfig] = field(default_factory=lambda: BUILTIN_PLANS)


def with_shared_state(config: ServiceConfig, db: object) -> ServiceConfig:
    """With the service's state in a database URL (*db*), the contact store and the bounce
    ledger live there too, unless their own setting names a database: what one instance
    learns or forgets, every instance reads. Files stay where they were (one host)."""
    if not is_url(db):
        return config
    engine = config.engine
    bounces, contacts = engine.bounces, engine.contacts
    engine = dataclasses.replace(
        engine,
        bounces=bounces if is_url(bounces.db) else dataclasses.replace(bounces, db=str(db)),
        contacts=contacts if is_url(contacts.db) else dataclasses.replace(contacts, db=str(db)),
    )
    return dataclasses.replace(config, engine=engine)


def env_settings() -> frozenset[str]:
    """Every ``LISTCLEAN_`` variable that sets a setting, the service's and the engine's."""
    return (
        env_names(Config)
        | env_names(HttpConfig, HTTP_PREFIX)
        | env_names(AnonymousConfig, f"{ENV_PREFIX}ANONYMOUS_")
    )


def load_service_config(path: Path | None, env: Mapping[str, str] | None = None) -> ServiceConfig:
    """The file's settings over the defaults, then ``LISTCLEAN_`` variables over those: the
    engine's as for the command line (``LISTCLEAN_DNS_TIMEOUT``), the service's under
    ``LISTCLEAN_HTTP_`` (the ``[service]`` table) and ``LISTCLEAN_ANONYMOUS_`` (plans come from
    the file only)."""
    config = _from_file(path)
    env = env or {}
    known = env_settings()
    return dataclasses.replace(
        config,
        engine=with_environment(config.engine, env, known=known),
        service=with_environment(config.service, env, HTTP_PREFIX, known),
        anonymous=with_environment(config.anonymous, env, f"{ENV_PREFIX}ANONYMOUS_", known),
    )


def _from_file(path: Path | None) -> ServiceConfig:
    if path is None:
        return ServiceConfig()
    data = load_toml(path)
    where = str(path)
    known = {*ENGINE_SECTIONS, "service", "anonymous", "plans"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(
            f"{where}: unknown section [{unknown[0]}]; "
            f"known sections are {', '.join(sorted(known))}."
        )
    engine = build(Config, {k: data[k] for k in ENGINE_SECTIONS if k in data}, where)
    config = ServiceConfig(
        engine=engine,
        service=build(HttpConfig, data.get("service", {}), f"{where} [service]"),
        anonymous=build(AnonymousConfig, data.get("anonymous", {}), f"{where} [anonymous]"),
        plans=_plans(data.get("plans", {}), where),
    )
    return config


def _plans(tables: Any, where: str) -> Mapping[str, PlanConfig]:
    if not isinstance(tables, dict):
        raise ConfigError(f"{where}: [plans] must hold one [plans.NAME] table per plan.")
    plans = dict(BUILTIN_PLANS)
    for name, table in tables.items():
        plans[name] = build(PlanConfig, table, f"{where} [plans.{name}]")
    return MappingProxyType(plans)
