"""Service settings: ``configs/service.toml`` = the engine's tables plus the service's own.

    [dns] [cache] [lists]    as in configs/pipeline.toml (the engine)
    [verify]                 mode = "smtp" makes /api/email probe mailboxes too (slow); a paid
                             verifier is asked for the keys of plans with vendor = true
    [service]                host, port, database, trusted proxies, request limits
    [anonymous]              quotas of requests without a key (per client IP per UTC day)
    [plans.NAME]             quotas per UTC calendar month for keys on plan NAME
    [jobs]                   bulk jobs: where their files go, the cores they use, upload limits

The built-in plans (default, starter, growth, scale) are always there; a ``[plans.NAME]`` table
overrides one of them or adds a new plan.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pipeline.core.config import (
    ANONYMOUS_PREFIX,
    HTTP_PREFIX,
    JOBS_PREFIX,
    AnonymousConfig,
    Config,
    HttpConfig,
    JobsConfig,
    build,
    load_toml,
    setting,
    setting_variables,
    with_environment,
)
from pipeline.core.db.postgres import is_url
from pipeline.core.errors import ConfigError

ENGINE_SECTIONS = (
    "dns",
    "cache",
    "lists",
    "verify",
    "api",
    "vendor",
    "routing",
    "bounces",
    "contacts",
)


@dataclass(frozen=True)
class PlanConfig:
    email_per_month: int = setting(100, "/api/email requests per UTC calendar month.")
    find_per_month: int = setting(5, "/api/find requests per UTC calendar month.")
    burst_per_second: int = setting(0, "Requests per second per key; 0: no burst limit.", minimum=0)
    vendor: bool = setting(
        False,
        "Whether /api/email asks the paid verifier ([verify] mode a vendor) for this plan's keys; "
        "anonymous callers never have it asked.",
    )


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
    jobs: JobsConfig = field(default_factory=JobsConfig)
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


def load_service_config(path: Path | None, env: Mapping[str, str] | None = None) -> ServiceConfig:
    """The file's settings over the defaults, then ``LISTCLEAN_`` variables over those: the
    engine's as for the command line (``LISTCLEAN_DNS_TIMEOUT``), the service's under
    ``LISTCLEAN_HTTP_`` (the ``[service]`` table), ``LISTCLEAN_ANONYMOUS_`` and ``LISTCLEAN_JOBS_``
    (plans come from the file only)."""
    config = _from_file(path)
    env = env or {}
    known = setting_variables()
    return dataclasses.replace(
        config,
        engine=with_environment(config.engine, env, known=known),
        service=with_environment(config.service, env, HTTP_PREFIX, known),
        anonymous=with_environment(config.anonymous, env, ANONYMOUS_PREFIX, known),
        jobs=with_environment(config.jobs, env, JOBS_PREFIX, known),
    )


def _from_file(path: Path | None) -> ServiceConfig:
    if path is None:
        return ServiceConfig()
    data = load_toml(path)
    where = str(path)
    known = {*ENGINE_SECTIONS, "service", "anonymous", "jobs", "plans"}
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
        jobs=build(JobsConfig, data.get("jobs", {}), f"{where} [jobs]"),
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
