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
    common_options,
    config_file,
    sandbox_world,
    utf8_text,
    with_resolvers,
)
from pipeline.core.bounces.ledger import BounceLedger
from pipeline.core.config import method_keys
from pipeline.core.contacts.store import ContactStore
from pipeline.core.db.database import Where, is_url
from pipeline.core.errors import UsageError
from pipeline.service.accounts.store import ServiceStore
from pipeline.service.settings import ServiceConfig, load_service_config, with_shared_state


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser("serve", help="run the HTTP verification service")
    serve.add_argument(
        "--host", type=utf8_text, help="address to listen on (default from [service] host)"
    )
    serve.add_argument("--port", type=int, help="TCP port (default from [service] port)")
    serve.add_argument(
        "--db",
        type=utf8_text,
        metavar="PATH|URL",
        help="keys, quota counters, contacts, bounces: a SQLite file or a postgresql:// URL",
    )
    common_options(serve)
    serve.set_defaults(handler=_serve, quiet=True)

    keys = commands.add_parser("keys", help="create, list and revoke API keys")
    key_commands = keys.add_subparsers(required=True, metavar="ACTION")
    create = key_commands.add_parser("create", help="create a key; prints its secret once")
    create.add_argument(
        "--plan", required=True, type=utf8_text, metavar="NAME", help="plan the key is on"
    )
    create.add_argument("--label", type=utf8_text, default="", help="a note for whom the key is")
    create.set_defaults(handler=_keys_create)
    listing = key_commands.add_parser("list", help="list keys (never their secrets)")
    listing.set_defaults(handler=_keys_list)
    revoke = key_commands.add_parser("revoke", help="revoke a key by its id")
    revoke.add_argument("key_id", type=utf8_text, metavar="KEY_ID")
    revoke.set_defaults(handler=_keys_revoke)
    database = commands.add_parser("db", help="the service's database")
    db_commands = database.add_subparsers(required=True, metavar="ACTION")
    migrate = db_commands.add_parser(
        "migrate", help="create or upgrade the tables of every store the service uses"
    )
    migrate.set_defaults(handler=_db_migrate)
    for sub in (create, listing, revoke, migrate):
        sub.add_argument("--db", type=utf8_text, metavar="PATH|URL", help="keys and quota counters")
        sub.add_argument("--config", type=Path, metavar="FILE", help="service settings (TOML)")


def _serve(args: argparse.Namespace) -> int:
    return serve(args)


def serve(args: argparse.Namespace, clock: Callable[[], float] = time.time) -> int:
    """``listclean serve``; *clock* is the quota windows' time (a test moves it)."""
    from pipeline.service.app import Paths, create_app
    from pipeline.service.connections.protocol import serve as serve_app

    service = load_service_config(config_file(args), os.environ)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    with contextlib.ExitStack() as stack:
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


def _keys_create(args: argparse.Namespace) -> int:
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


def _keys_list(args: argparse.Namespace) -> int:
    with _state(args) as store:
        keys = store.list_keys()
    print(f"{'KEY_ID':<12} {'PLAN':<10} {'CREATED (UTC)':<20} {'STATUS':<8} LABEL")
    for key in keys:
        created = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(key.created_at))
        status = "active" if key.active else "revoked"
        print(f"{key.key_id:<12} {key.plan:<10} {created:<20} {status:<8} {key.label}")
    return 0


def _keys_revoke(args: argparse.Namespace) -> int:
    with _state(args) as store:
        key = store.revoke_key(args.key_id)
    print(f"API key {key.key_id} is revoked.")
    return 0


def _db_migrate(args: argparse.Namespace) -> int:
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
