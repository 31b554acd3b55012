"""`listclean keys create | list | revoke`, in process, and what the server makes of the keys."""

from __future__ import annotations

import re
from pathlib import Path

import aiohttp
import pytest

from pipeline.cli import main
from tests.service.conftest import Env, Reply, fetch, run

CREATED = re.compile(
    r"Created API key (k_[0-9a-f]{8}) on plan (\w+)\. Its secret, shown only this once:\n"
    r"(\S+)\n"
)


def create(capsys: pytest.CaptureFixture[str], db: Path, *extra: str) -> tuple[str, str, str]:
    assert main(["keys", "create", "--db", str(db), *extra]) == 0
    out = capsys.readouterr().out
    match = CREATED.fullmatch(out)
    assert match, out
    key_id, plan, secret = match.groups()
    return key_id, plan, secret


def listing(capsys: pytest.CaptureFixture[str], db: Path) -> list[dict[str, str]]:
    """`keys list` as rows of {key_id, plan, created, status, label}."""
    assert main(["keys", "list", "--db", str(db)]) == 0
    header, *lines = capsys.readouterr().out.splitlines()
    assert header.split() == ["KEY_ID", "PLAN", "CREATED", "(UTC)", "STATUS", "LABEL"]
    rows = []
    for line in lines:
        key_id, plan, day, clock, status, *label = line.split(maxsplit=5)
        rows.append(
            {
                "key_id": key_id,
                "plan": plan,
                "created": f"{day} {clock}",
                "status": status,
                "label": label[0] if label else "",
            }
        )
    return rows


def test_create_list_revoke_and_the_server_agrees(
    env: Env, capsys: pytest.CaptureFixture[str]
) -> None:
    key_id, plan, secret = create(capsys, env.db, "--plan", "starter", "--label", "acme")
    assert plan == "starter"
    assert secret.startswith("lc_")
    assert len(secret) > 40

    (row,) = listing(capsys, env.db)
    assert {k: v for k, v in row.items() if k != "created"} == {
        "key_id": key_id,
        "plan": "starter",
        "status": "active",
        "label": "acme",
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d", row["created"])

    async def scenario() -> tuple[Reply, str, Reply]:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            api = f"{url}/api/email?email=john.doe@gmail.com"
            keyed = {"Authorization": f"Bearer {secret}"}
            before = await fetch(s, "GET", api, headers=keyed)
            # Revoked while the server runs: the next request already knows.
            assert main(["keys", "revoke", key_id, "--db", str(env.db)]) == 0
            revoked = capsys.readouterr().out
            after = await fetch(s, "GET", api, headers=keyed)
            return before, revoked, after

    before, revoked, after = run(scenario())
    assert (before.status, before.headers["X-RateLimit-Limit"], before.remaining) == (
        200,
        "10000",
        9999,
    )
    assert revoked == f"API key {key_id} is revoked.\n"
    assert after.status == 401
    assert after.json["code"] == "invalid_api_key"
    assert after.json["detail"] == f"The API key {key_id} has been revoked."

    assert [(r["key_id"], r["status"]) for r in listing(capsys, env.db)] == [(key_id, "revoked")]


def test_the_secret_is_never_listed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "keys.sqlite"
    secrets = [create(capsys, db, "--plan", plan)[2] for plan in ("default", "growth", "scale")]
    assert main(["keys", "list", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    for secret in secrets:
        assert secret not in out
        assert secret.removeprefix("lc_") not in out
    assert "lc_" not in out
    assert [line.split()[1] for line in out.splitlines()[1:]] == ["default", "growth", "scale"]


def test_an_unknown_plan_is_exit_2_naming_the_plans(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["keys", "create", "--plan", "gold", "--db", str(tmp_path / "k.sqlite")]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "listclean: error: There is no plan named 'gold'; the plans are "
        "default, starter, growth, scale. Add one as a [plans.NAME] table in the service "
        "config.\n"
    )


def test_a_plan_from_the_config_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "service.toml"
    config.write_text("[plans.gold]\nemail_per_month = 5\n", encoding="utf-8")
    db = tmp_path / "k.sqlite"
    _, plan, _ = create(capsys, db, "--plan", "gold", "--config", str(config))
    assert plan == "gold"
    assert [r["plan"] for r in listing(capsys, db)] == ["gold"]


def test_revoking_an_unknown_id_is_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "k.sqlite"
    create(capsys, db, "--plan", "default")
    assert main(["keys", "revoke", "k_00000000", "--db", str(db)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "listclean: error: There is no API key with id 'k_00000000'. "
        "`listclean keys list` shows the ids.\n"
    )
    assert [row["status"] for row in listing(capsys, db)] == ["active"]
