"""Kubernetes service links: the variables Kubernetes gives a container for each Service of its
namespace whose name starts with ``listclean`` are ignored with one warning, never taken for
settings and never refused; any other unknown ``LISTCLEAN_`` variable is still refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.core.config import load_config, service_link_warning, service_links, setting_variables
from pipeline.core.errors import ConfigError
from pipeline.service.settings import load_service_config


def service_link_variables(
    service: str, ip: str, ports: list[tuple[str, int, str]]
) -> dict[str, str]:
    """What the kubelet sets for a Service (pkg/kubelet/envvars: makeEnvVariableName upper-cases
    the name and turns '-' into '_'): *ports* as (port name, port, protocol)."""
    prefix = service.upper().replace("-", "_")
    name, first, proto = ports[0]
    env = {
        f"{prefix}_SERVICE_HOST": ip,
        f"{prefix}_SERVICE_PORT": str(first),
        f"{prefix}_PORT": f"{proto.lower()}://{ip}:{first}",
    }
    for name, port, proto in ports:
        if name:
            env[f"{prefix}_SERVICE_PORT_{name.upper().replace('-', '_')}"] = str(port)
        link = f"{prefix}_PORT_{port}_{proto}"
        env[link] = f"{proto.lower()}://{ip}:{port}"
        env[f"{link}_PROTO"] = proto.lower()
        env[f"{link}_PORT"] = str(port)
        env[f"{link}_ADDR"] = ip
    return env


NAMESPACE = {
    **service_link_variables("listclean", "10.96.0.10", [("http", 8080, "TCP")]),
    **service_link_variables("listclean-api", "10.96.0.11", [("", 80, "TCP")]),
    **service_link_variables("listclean-verify", "10.96.0.12", [("smtp", 25, "TCP")]),
    **service_link_variables("listclean-http", "10.96.0.13", [("", 8080, "TCP")]),
}


def test_a_namespace_of_listclean_services_sets_no_setting() -> None:
    assert "LISTCLEAN_SERVICE_HOST" in NAMESPACE and "LISTCLEAN_VERIFY_PORT" in NAMESPACE
    assert load_config(None, NAMESPACE, setting_variables()) == load_config(None)
    assert load_service_config(None, NAMESPACE) == load_service_config(None)


def test_the_service_is_set_by_names_kubernetes_cannot_give() -> None:
    env = {**NAMESPACE, "LISTCLEAN_HTTP_HOST": "0.0.0.0", "LISTCLEAN_HTTP_PORT": "9000"}
    service = load_service_config(None, env).service
    assert (service.host, service.port) == ("0.0.0.0", 9000)
    # A setting's name in a link's shape is told apart by its value: a port, not a URL.
    assert load_config(None, {"LISTCLEAN_VERIFY_PORT": "2525"}).verify.port == 2525


def test_one_warning_names_the_links_and_the_new_names() -> None:
    links = service_links(NAMESPACE, setting_variables())
    assert links == sorted(NAMESPACE)
    message = service_link_warning(links, setting_variables())
    assert "LISTCLEAN_SERVICE_HOST: use LISTCLEAN_HTTP_HOST" in message
    assert "LISTCLEAN_SERVICE_PORT: use LISTCLEAN_HTTP_PORT" in message
    assert "enableServiceLinks: false" in message


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LISTCLEAN_SERVICE_DB": "x.sqlite"}, "SERVICE_DB is now named LISTCLEAN_HTTP_DB"),
        ({"LISTCLEAN_DNS_TIMEOUTS": "1"}, "Unknown environment variable LISTCLEAN_DNS_TIMEOUTS"),
        ({"LISTCLEAN_SERVICEHOST": "1"}, "Unknown environment variable LISTCLEAN_SERVICEHOST"),
        ({"LISTCLEAN_PORTS": "1"}, "Unknown environment variable LISTCLEAN_PORTS"),
    ],
)
def test_other_unknown_variables_are_still_refused(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_service_config(None, {**NAMESPACE, **env})


def test_commands_run_in_such_a_namespace_with_one_warning(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for name, value in NAMESPACE.items():
        monkeypatch.setenv(name, value)
    args = ["verify", "ann@gmail.com", "--offline", "--cache-dir", str(tmp_path)]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["EMAIL"] == "ann@gmail.com"
    warnings = [line for line in captured.err.splitlines() if "Ignored" in line]
    assert len(warnings) == 1 and "LISTCLEAN_API_SERVICE_HOST" in warnings[0]
