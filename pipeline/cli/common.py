"""What the commands share: their options, the effective config, the sandbox, cache paths and
the engine (with its mailbox or remote checker and progress bars)."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import ipaddress
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

from pipeline.cli.log import Log, duration
from pipeline.core.assembly import build as assembly
from pipeline.core.assembly.build import EngineOptions
from pipeline.core.config import (
    VENDORS,
    Config,
    InputConfig,
    RoutingConfig,
    VerifyConfig,
    api_key,
    cache_root,
    load_config,
    method_keys,
    service_link_warning,
    service_links,
    setting_variables,
)
from pipeline.core.db.database import Where, store_where
from pipeline.core.engine import Engine
from pipeline.core.errors import UsageError
from pipeline.core.files.encodings import Decoding, codec_name
from pipeline.core.mailboxes.types import Plan
from pipeline.core.verdict import Reason
from pipeline.sandbox.files import SANDBOX_SETTINGS
from pipeline.stages.state.workdir import WorkDir

# --- the effective configuration ------------------------------------------------------------


def verify_config(args: argparse.Namespace, config: Config) -> VerifyConfig:
    budgets = getattr(args, "budget", None) or []
    plain = [n for method, n in budgets if not method]
    overrides = {
        "mode": getattr(args, "verify", None),
        "port": getattr(args, "smtp_port", None),
        "budget": plain[-1] if plain else None,
        "helo": getattr(args, "helo", None),
        "mail_from": getattr(args, "mail_from", None),
    }
    given = {k: v for k, v in overrides.items() if v is not None}
    return dataclasses.replace(config.verify, **given)


def routing_config(args: argparse.Namespace, config: Config) -> RoutingConfig:
    """[routing] with the --budget METHOD=N flags after the file's budgets (the last wins)."""
    named = [f"{method}={n}" for method, n in getattr(args, "budget", None) or [] if method]
    if not named:
        return config.routing
    return dataclasses.replace(config.routing, budgets=(*config.routing.budgets, *named))


def config_file(args: argparse.Namespace) -> Path | None:
    """The settings file: --config, else with --sandbox the sandbox's own (short timeouts)."""
    given: Path | None = args.config
    return given or (SANDBOX_SETTINGS if getattr(args, "sandbox", False) else None)


def settings(args: argparse.Namespace) -> Config:
    """The settings: defaults, then the file, then ``LISTCLEAN_`` variables (flags come last)."""
    return load_config(config_file(args), os.environ, setting_variables())


def decoding_of(flag: str | None, given: InputConfig) -> Decoding:
    """How a text input's encoding is chosen: --encoding, else [input] encoding, else found."""
    name = codec_name(flag) if flag else given.encoding
    return Decoding(name, given.encoding_margin)


def warn_service_links(log: Log) -> None:
    """One warning naming the Kubernetes service-link variables the settings ignore, if any."""
    if links := service_links(os.environ, setting_variables()):
        message = service_link_warning(links, setting_variables())
        log.warning("service_links", message, variables=links)


def effective_config(args: argparse.Namespace) -> Config:
    config = with_resolvers(settings(args), args.resolver)
    verify = verify_config(args, config)
    api, vendor = config.api, config.vendor
    url, concurrency = getattr(args, "api_url", None), getattr(args, "concurrency", None)
    if verify.mode in VENDORS:  # --api-url and --concurrency are the vendor's
        vendor = dataclasses.replace(vendor, url=url or vendor.url)
        vendor = dataclasses.replace(vendor, concurrency=concurrency or vendor.concurrency)
    else:
        api = dataclasses.replace(api, url=url or api.url)
        api = dataclasses.replace(api, concurrency=concurrency or api.concurrency)
    routing = routing_config(args, config)
    return dataclasses.replace(config, verify=verify, api=api, vendor=vendor, routing=routing)


def with_resolvers(config: Config, resolvers: Sequence[str]) -> Config:
    if not resolvers:
        return config
    servers = tuple(_nameserver(r) for r in resolvers)
    return dataclasses.replace(config, dns=dataclasses.replace(config.dns, nameservers=servers))


def _nameserver(text: str) -> str:
    """Check HOST[:PORT]; c-ares wants an IP address, with IPv6 in brackets when a port follows."""
    host, port = text, ""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.removeprefix(":")
    elif text.count(":") == 1:
        host, port = text.split(":")
    try:
        ip = ipaddress.ip_address(host)
        if port and not 0 < int(port) < 65536:
            raise ValueError(port)
    except ValueError as exc:
        raise UsageError(
            f"--resolver {text!r} is not an IP address with an optional port. "
            "Write it as 192.0.2.53, 192.0.2.53:5353 or [2001:db8::53]:5353."
        ) from exc
    if not port:
        return str(ip)
    return f"[{ip}]:{port}" if ip.version == 6 else f"{ip}:{port}"


# --- the sandbox ------------------------------------------------------------------------------


def sandbox_world(stack: contextlib.ExitStack, args: argparse.Namespace, config: Config) -> Config:
    """With --sandbox, start the loopback world (closed with *stack*) and point at it.

    The world's DNS server answers every query, and its mail servers (if it has any) listen on
    loopback addresses on one port, which becomes the SMTP port unless --smtp-port is given.
    """
    if not args.sandbox:
        return config
    address, smtp_port = stack.enter_context(_sandbox(args.world))
    verify = config.verify
    if smtp_port is not None and getattr(args, "smtp_port", None) is None:
        verify = dataclasses.replace(verify, port=smtp_port)
    dns = dataclasses.replace(config.dns, nameservers=(address,))
    return dataclasses.replace(config, dns=dns, verify=verify)


@contextlib.contextmanager
def _sandbox(world_path: Path) -> Iterator[tuple[str, int | None]]:
    from pipeline.sandbox.dns_server import SandboxDNS, load_world
    from pipeline.sandbox.smtp_server import SandboxSMTP

    try:
        world = load_world(world_path)
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"Cannot load the sandbox world {world_path}: {exc}. Pass a world file with --world."
        ) from exc
    with SandboxDNS(world) as dns, SandboxSMTP(world.smtp) as smtp:
        yield dns.address, smtp.port if world.smtp else None


# --- where things are kept --------------------------------------------------------------------


def cache_path(args: argparse.Namespace, config: Config) -> Path:
    root = cache_root(args.cache_dir, config)
    # Sandbox answers are made up: they must never be mixed into the real cache.
    return root / ("sandbox-domains.sqlite" if args.sandbox else "domains.sqlite")


def bounce_ledger_path(args: argparse.Namespace, config: Config) -> Where:
    return store_where(cache_path(args, config), "bounces", config.bounces.db)


# --- the engine -------------------------------------------------------------------------------


@contextlib.contextmanager
def open_engine(args: argparse.Namespace, work: WorkDir | None = None) -> Iterator[Engine]:
    """The engine the command's arguments describe (see :mod:`pipeline.core.assembly.build`)."""
    with contextlib.ExitStack() as stack:
        config = sandbox_world(stack, args, effective_config(args))
        quiet = args.quiet
        log: Log = args.log
        options = EngineOptions(
            offline=args.offline,
            loopback_only=args.sandbox,
            progress=log.meters(config.run.progress_every, quiet),
            api_key=api_key(getattr(args, "api_key", None)),
            api_keys=method_keys(config.verify.mode, getattr(args, "api_key", None)),
            spent=work.spent if work else 0,
            on_plan=None if quiet else lambda plan: _show_plan(log, plan, config),
            on_spent=work.record_spent if work else None,
            spent_of=work.spent_of if work else lambda method: 0,
            on_spent_of=work.record_spent_of if work else None,
        )
        yield assembly.open_engine(stack, config, cache_path(args, config), options)


def _show_plan(log: Log, plan: Plan, config: Config) -> None:
    log.info("preflight", plan_text(plan, config), **dataclasses.asdict(plan))


def plan_text(plan: Plan, config: Config | None = None) -> str:
    return _plan_text(plan, config) + refresh_text(plan)


def refresh_text(plan: Plan) -> str:
    """What the pre-flight line says of the cached answers due again; "" when none is."""
    refresh = plan.refresh
    if refresh is None or not refresh.due:
        return ""
    runs = "this run refreshes" if refresh.runs == 1 else f"{refresh.runs:,} runs refresh"
    return (
        f" {refresh.due:,} cached answers are due again (oldest first, after the addresses "
        f"never answered); this budget refreshes {refresh.refreshed:,} of them, and at this "
        f"budget {runs} them all."
    )


def _plan_text(plan: Plan, config: Config | None = None) -> str:
    if plan.kind == "vendor":
        return vendor_plan_text(plan)
    budget = "no limit" if plan.budget is None else f"{plan.budget:,} RCPTs"
    text = (
        f"pre-flight: {plan.distinct_addresses:,} distinct addresses; "
        f"{plan.cached:,} answered from the cache; {plan.need_checks:,} need an SMTP check; "
        f"budget {budget} covers {plan.covered:,} of them."
    )
    if plan.kind == "api":
        text = text.replace("SMTP check", "API request")
        if plan.covered and config is not None:
            text += (
                f" At most {config.api.concurrency} requests are in flight at once; the "
                "service's rate-limit headers set the pace."
            )
        return text
    pace = plan.pace
    if pace is not None:
        text += (
            f" The pacing settings make this take at least {duration(pace.seconds)}: the "
            f"busiest provider, {pace.busiest}, gets {pace.requests:,} RCPTs at "
            f"{pace.per_minute:,} a minute"
        )
        if pace.greylist_seconds:
            text += (
                f"; greylisted addresses are retried over up to {duration(pace.greylist_seconds)}"
            )
        text += "."
    return text


def vendor_plan_text(plan: Plan) -> str:
    """The pre-flight line of a paid verifier: what it will be asked, and what that costs."""
    budget = "no limit" if plan.budget is None else f"{plan.budget:,} credits"
    balance = "not told" if plan.balance is None else f"{plan.balance:,} credits"
    text = (
        f"pre-flight: {plan.distinct_addresses:,} distinct addresses; "
        f"{plan.cached:,} answered from the paid-answer cache"
    )
    if plan.settled:
        text += f", {plan.settled:,} settled by the bounce ledger"
    if not plan.need_checks:
        return text + f"; none left for {plan.vendor}: no credit will be spent."
    return text + (
        f"; {plan.need_checks:,} left for {plan.vendor}, which will be asked about "
        f"{plan.covered:,} of them: at most {plan.covered:,} credits (budget {budget}, balance "
        f"{balance}). The addresses go to {plan.vendor}, a third party."
    )


def sender_hint(reasons: dict[str, int]) -> str:
    """What to do when mail servers refused us rather than the mailboxes; "" when none did."""
    refused = reasons.get(Reason.SMTP_SENDER_REFUSED.value, 0)
    if not refused:
        return ""
    return (
        f"{refused:,} rows were not verified because their mail servers refused our "
        "envelope sender or EHLO name (smtp_sender_refused). Run `listclean doctor`, then pass "
        "--helo with this host's fully qualified name and --mail-from with an address in a "
        "domain you control (an MX record and an SPF record allowing this host)."
    )
