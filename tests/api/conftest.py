"""The API's tests run against the sample world's DNS server on 127.0.0.1."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pipeline.core.config import Config, load_config
from pipeline.sandbox.dns_server import SandboxDNS
from pipeline.sandbox.files import SANDBOX_SETTINGS


@pytest.fixture
def config(sample_dns: SandboxDNS, tmp_path: Path) -> Config:
    settings = load_config(SANDBOX_SETTINGS)
    dns = dataclasses.replace(settings.dns, nameservers=(sample_dns.address,))
    cache = dataclasses.replace(settings.cache, dir=str(tmp_path / "cache"))
    return dataclasses.replace(settings, dns=dns, cache=cache)
