"""Config files: defaults, overrides, and clear errors for every kind of mistake."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.core.config import Config, DnsConfig, load_config, setting_variables
from pipeline.core.errors import ConfigError
from tests.conftest import REPO


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def test_shipped_file_equals_the_defaults() -> None:
    assert load_config(REPO / "configs" / "pipeline.toml") == Config()
    assert load_config(None) == Config()


def test_values_override_defaults(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, '[dns]\ntimeout = 1\nnameservers = ["127.0.0.1:53"]\n'))
    assert config.dns == DnsConfig(timeout=1.0, nameservers=("127.0.0.1:53",))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[dns]\ntimout = 1\n", "unknown setting 'timout'"),
        ("[dnss]\n", "unknown setting 'dnss'"),
        ('[dns]\ntimeout = "fast"\n', "timeout must be of type float"),
        ("[dns]\nattempts = 0\n", "attempts must be at least 1"),
        ("[dns]\ntimeout = 0\n", "timeout must be at least 0.01"),
        ("[dns]\nattempts = true\n", "attempts must be of type int"),
        ('[dns]\ncanaries = "gmail.com"\n', "canaries must be a list of strings"),
        ("dns = 3\n", "must be a table"),
        ("[dns\n", "not valid TOML"),
        ('[verify]\nmode = "smtpp"\n', "mode must be one of 'none', 'smtp', 'api', 'zerobounce'"),
        ('[routing]\nroutes = ["google.com"]\n', "is not written PROVIDER=METHOD"),
        ('[routing]\nroutes = ["google.com=pigeon"]\n', "'pigeon' is no method"),
        ('[routing]\nbudgets = ["zerobounce=lots"]\n', "must be a whole number"),
        ('[vendor]\nurls = ["acme=https://x"]\n', "'acme' is no vendor"),
        ('[contacts]\nregion = "XX"\n', r"contacts\]: region 'XX' is no country"),
        ("[read]\nmax_unpack_disk_share = 10\n", r"is a share \(0 to 1"),
        ("[read]\nmax_field_bytes = -1\n", "max_field_bytes must be at least 0"),
    ],
)
def test_mistakes_are_named(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(write(tmp_path, text))


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Cannot read config file"):
        load_config(tmp_path / "absent.toml")


def test_zero_backoff_is_allowed(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "[dns]\nbackoff = 0\n")).dns.backoff == 0.0


def test_closed_sets_keep_their_values(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, '[verify]\nmode = "api"\n[contacts]\nregion = "gb"\n'))
    assert config.verify.mode == "api"
    assert config.contacts.region == "GB"


def test_environment_overrides_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "[dns]\ntimeout = 1\nattempts = 5\n")
    env = {
        "LISTCLEAN_DNS_TIMEOUT": "0.5",
        "LISTCLEAN_DNS_CANARIES": "a.example, b.example",
        "LISTCLEAN_VERIFY_GREYLIST_DELAYS": "[1, 2.5]",
        "LISTCLEAN_VERIFY_MODE": "smtp",
        "LISTCLEAN_API_KEY": "a secret, not a setting",
        "PATH": "/usr/bin",
    }
    config = load_config(path, env)
    assert config.dns.timeout == 0.5  # env over file
    assert config.dns.attempts == 5  # file over default
    assert config.dns.canaries == ("a.example", "b.example")
    assert config.verify.greylist_delays == (1.0, 2.5)
    assert config.verify.mode == "smtp"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LISTCLEAN_DNS_TIMEOUTS": "1"}, "Unknown environment variable LISTCLEAN_DNS_TIMEOUTS"),
        ({"LISTCLEAN_DNS_TIMEOUT": "fast"}, "LISTCLEAN_DNS_TIMEOUT must be of type float"),
        ({"LISTCLEAN_DNS_ATTEMPTS": "0"}, "LISTCLEAN_DNS_ATTEMPTS must be at least 1"),
        ({"LISTCLEAN_VERIFY_MODE": "smtpp"}, "LISTCLEAN_VERIFY_MODE must be one of"),
        ({"LISTCLEAN_CONTACTS_REGION": "XX"}, "LISTCLEAN_CONTACTS_REGION 'XX' is no country"),
    ],
)
def test_environment_mistakes_are_named(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        load_config(None, env)


def test_another_commands_settings_are_not_refused() -> None:
    from pipeline.service.settings import load_service_config

    env = {"LISTCLEAN_HTTP_PORT": "9000", "LISTCLEAN_DNS_TIMEOUT": "0.7"}
    assert load_config(None, env, setting_variables()).dns.timeout == 0.7
    service = load_service_config(None, env)
    assert (service.service.port, service.engine.dns.timeout) == (9000, 0.7)
