"""The probes' names: a real run whose default EHLO name or sender cannot be real stops first."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.core.config import VerifyConfig
from pipeline.core.errors import UsageError
from pipeline.core.lists import DomainLists
from pipeline.core.mailboxes.identity import (
    SANDBOX_HELO,
    Identity,
    identity_of,
    name_problem,
    problems,
    require_real,
)
from pipeline.sandbox.dns_server import SandboxDNS
from pipeline.sandbox.files import SANDBOX_SETTINGS
from tests.conftest import SAMPLE_CSV


@pytest.mark.parametrize(
    ("name", "real"),
    [
        ("mail.example-shop.com", True),
        ("probe.listclean-sandbox.net", True),
        ("localhost", False),
        ("vm", False),  # no dot: what a host without a fully qualified name calls itself
        ("localhost.localdomain", False),  # .localdomain is no top-level domain
        ("myhost.local", False),  # RFC 6762
        ("box.home.arpa", False),  # RFC 8375
        ("mail.example.com", False),  # RFC 2606
        ("host.lan", False),
        ("", False),
    ],
)
def test_name_problem(lists: DomainLists, name: str, real: bool) -> None:
    assert (name_problem(name, lists.is_tld) == "") is real


def test_defaults_come_from_this_host_or_the_sandbox(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(socket, "getfqdn", lambda: "vm")
    assert identity_of(VerifyConfig()) == Identity("vm", "postmaster@vm", False, False)
    sandbox = identity_of(VerifyConfig(), sandbox=True)
    assert sandbox.helo == SANDBOX_HELO and sandbox.mail_from == f"postmaster@{SANDBOX_HELO}"
    given = identity_of(VerifyConfig(helo="mx.acme-shop.com"))
    assert given == Identity("mx.acme-shop.com", "postmaster@mx.acme-shop.com", True, True)


def test_only_default_names_are_refused(lists: DomainLists) -> None:
    derived = Identity("localhost", "postmaster@localhost", False, False)
    assert len(problems(derived, lists.is_tld)) == 2
    with pytest.raises(UsageError, match=r"--helo .* --mail-from"):
        require_real(derived, lists.is_tld)
    require_real(Identity("localhost", "postmaster@localhost", True, True), lists.is_tld)
    half = Identity("vm", "verify@acme-shop.com", False, True)
    (only,) = problems(half, lists.is_tld)
    assert only.startswith("the EHLO name 'vm'")


def test_a_real_run_on_a_host_without_a_real_name_stops_before_any_probe(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    sample_dns: SandboxDNS,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setattr(socket, "getfqdn", lambda: "localhost")
    args = ["clean", str(SAMPLE_CSV), "-o", str(tmp_path / "o.parquet"), "--verify", "smtp"]
    args += ["--resolver", sample_dns.address, "--cache-dir", str(tmp_path / "c"), "--quiet"]
    args += ["--config", str(SANDBOX_SETTINGS)]
    sample_dns.reset_counts()
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "'postmaster@localhost'" in err and "--mail-from" in err and "doctor" in err
    assert not (tmp_path / "o.parquet").exists()
    assert not (tmp_path / "o.parquet.work").exists()  # a refused run leaves no work folder
    assert sample_dns.queries() == []  # refused before anything was asked
