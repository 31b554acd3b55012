"""The HTTP service: ``serve`` it, and manage its API ``keys``."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import logging
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import platformdirs

from pipeline.cli.common import (
    cache_path,
    config_file,
    sandbox_world,
    with_resolvers,
)
from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.config import method_keys
from pipeline.core.contacts.store import ContactStore
from pipeline.core.db.database import Where, is_url
from pipeline.core.errors import UsageError
from pipeline.service.accounts.store import ServiceStore
from pipeline.service.settings import ServiceConfig, load_service_config, with_shared_state


def command_serve(args: argparse.Namespace) -> int:
    return serve(args)


@contextlib.contextmanager
def _service_log() -> Iterator[None]:
    """The service's log lines on standard error while it serves, as ``logging.basicConfig``
    sets them up, and taken away when it stops: ``serve`` called within a process that goes on
    (a test, a program that embeds it) leaves no handler on the root logger bound to a stream
    that may be closed by then. A root logger that has handlers already is left as it is."""
    root = logging.getLogger()
    if root.handlers:
        yield
        return
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def serve(args: argparse.Namespace, clock: Callable[[], float] = time.time) -> int:
    """``listclean serve``; *clock* is the quota windows' time (a test moves it)."""
    from pipeline.service.app import Paths, create_app
    from pipeline.service.connections.protocol import serve as serve_app

    service = load_service_config(config_file(args), os.environ)
    with _service_log(), contextlib.ExitStack() as stack:
        engine = sandbox_world(stack, args, with_resolvers(service.engine, args.resolver))
        service = dataclasses.replace(service, engine=engine)
        paths = Paths(db=_db_path(args, service), cache=cache_path(args, engine))
        keys = method_keys(service.engine.verify.mode)
        app = create_app(
            service,
            paths,
            offline=args.offline,
            clock=clock,
            loopback_only=args.sandbox,
            api_keys=keys,
        )
        asyncio.run(
            serve_app(
                app,
                args.host or service.service.host,
                args.port if args.port is not None else service.service.port,
                shutdown_timeout=service.service.shutdown_timeout,
                started=logging.getLogger("listclean.service").info,
            )
        )
    return 0


def _db_path(args: argparse.Namespace, service: ServiceConfig) -> Where:
    """Where the service's state lives: --db, else ``[service] db``, else a SQLite file in the
    user's data directory. A ``postgresql://`` URL is a database several instances share."""
    where = args.db or service.service.db
    if where:
        return where if is_url(where) else Path(where)
    return Path(platformdirs.user_data_dir("listclean")) / "service.sqlite"


def command_keys_create(args: argparse.Namespace) -> int:
    service = load_service_config(config_file(args), os.environ)
    if args.plan not in service.plans:
        raise UsageError(
            f"There is no plan named {args.plan!r}; the plans are {', '.join(service.plans)}. "
            "Add one as a [plans.NAME] table in the service config."
        )
    with _state(args, service) as store:
        key, secret = store.create_key(args.plan, args.label)
    print(f"Created API key {key.key_id} on plan {key.plan}. Its secret, shown only this once:")
    print(secret)
    return 0


def command_keys_list(args: argparse.Namespace) -> int:
    with _state(args) as store:
        keys = store.list_keys()
    print(f"{'KEY_ID':<12} {'PLAN':<10} {'CREATED (UTC)':<20} {'STATUS':<8} LABEL")
    for key in keys:
        created = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(key.created_at))
        status = "active" if key.active else "revoked"
        print(f"{key.key_id:<12} {key.plan:<10} {created:<20} {status:<8} {key.label}")
    return 0


def command_keys_revoke(args: argparse.Namespace) -> int:
    with _state(args) as store:
        key = store.revoke_key(args.key_id)
    print(f"API key {key.key_id} is revoked.")
    return 0


def command_db_migrate(args: argparse.Namespace) -> int:
    """Open each store the service shares, which creates what is missing of its tables (each
    store also does so when it is opened, so this is the explicit step before a deploy)."""
    service = load_service_config(config_file(args), os.environ)
    where = _db_path(args, service)
    engine = with_shared_state(service, where).engine
    with _state(args, service) as state:
        made = [f"keys and quota counters at {state.where}"]
    if is_url(where):  # a file-based service keeps its other stores beside each cache
        with ContactStore(engine.contacts.db, engine.contacts) as contacts:
            made.append(f"the contact store at {contacts.where}")
        with BounceLedger(engine.bounces.db, engine.bounces) as ledger:
            made.append(f"the bounce ledger at {ledger.where}")
    print("Up to date: " + "; ".join(made) + ".")
    return 0


@contextlib.contextmanager
def _state(
    args: argparse.Namespace, service: ServiceConfig | None = None
) -> Iterator[ServiceStore]:
    service = service or load_service_config(config_file(args), os.environ)
    state = ServiceStore(_db_path(args, service))
    try:
        yield state
    finally:
        state.close()
