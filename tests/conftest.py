"""The tests' own world: a real DNS server on 127.0.0.1 serving made-up zones."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline.core.config import DnsConfig
from pipeline.core.lists import DomainLists, load_lists
from pipeline.sandbox.dns_server import SandboxDNS, load_world
from pipeline.sandbox.files import SANDBOX_WORLD

REPO = Path(__file__).resolve().parent.parent
SAMPLE_WORLD = SANDBOX_WORLD
SAMPLE_CSV = REPO / "sample_data" / "list.csv"
SAMPLE_PARQUET = REPO / "sample_data" / "list.parquet"


@pytest.fixture(scope="session")
def lists() -> DomainLists:
    return load_lists()


@pytest.fixture(scope="session")
def sample_dns() -> Iterator[SandboxDNS]:
    """The sample world (the one `--sandbox` serves), on a random port."""
    with SandboxDNS(load_world(SAMPLE_WORLD)) as server:
        yield server


def fast_dns(address: str, **overrides: object) -> DnsConfig:
    """Short timeouts so failure scenarios cost the suite little time."""
    settings: dict[str, object] = {
        "nameservers": (address,),
        "timeout": 0.2,
        "attempts": 2,
        "backoff": 0.01,
        "concurrency": 20,
    }
    settings.update(overrides)
    return DnsConfig(**settings)  # type: ignore[arg-type]
