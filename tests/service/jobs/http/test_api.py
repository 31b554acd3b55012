"""The jobs API end to end: a list in, its job through its states, its files out, each answer
as documented; checked against ``clean`` on the same file in the same world."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openpyxl
import polars as pl
import pytest

from pipeline.sandbox.dns_server import SandboxDNS
from pipeline.service.settings import PlanConfig
from tests.conftest import SAMPLE_CSV
from tests.service.conftest import RATE_HEADERS, fetch, run
from tests.service.jobs.conftest import (
    SAMPLE_UNITS,
    Live,
    bearer,
    clean_directly,
    csv_rows,
    download,
    form,
    live_server,
    post_job,
    session,
    wait_for,
)

PLANS = {"team": PlanConfig(1000, 5), "small": PlanConfig(100, 5), "one": PlanConfig(1, 5)}


@pytest.fixture(scope="module")
def live(sample_dns: SandboxDNS, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    """One service for the module's tests: its job processes start once."""
    yield from live_server(sample_dns, tmp_path_factory.mktemp("live"), PLANS, link_ttl=60.0)


# What may differ between two runs of one list: when and how long, where the files went and in
# which format (a job writes Parquet; the other formats are made from it).
_PER_RUN = {"run", "stages", "files", "output", "rejects_file", "input", "output_format"}


def comparable(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k not in _PER_RUN}


def test_a_list_becomes_a_job_whose_files_are_what_clean_writes(live: Live, tmp_path: Path) -> None:
    secret, url = live.key("team"), live.url

    async def scenario() -> dict[str, Any]:
        async with session() as s:
            created = await post_job(s, url, secret, form(split="true"))
            job = created.json["id"]
            done = await wait_for(s, url, secret, job)
            files = {}
            for query in (
                "format=csv",
                "format=parquet",
                "format=xlsx",
                "format=rejects",
                "format=csv&verdict=valid",
                "format=csv&verdict=invalid",
            ):
                files[query] = await download(s, url, secret, f"/api/jobs/{job}/result?{query}")
            report = await download(s, url, secret, f"/api/jobs/{job}/report")
            polled = await fetch(s, "GET", f"{url}/api/jobs/{job}", headers=bearer(secret))
            return {
                "created": created,
                "done": done,
                "files": files,
                "report": report,
                "polled": polled,
            }

    seen = run(scenario())
    created = seen["created"]
    assert created.status == 202
    assert set(created.json) == {"id", "url", "state"}
    assert created.headers["Location"] == created.json["url"] == f"/api/jobs/{created.json['id']}"
    assert created.json["state"] == "queued"

    done = seen["done"]
    direct = clean_directly(
        live.env, live.config, SAMPLE_CSV, tmp_path / "direct" / "list.clean.csv", split=True
    )
    assert done["state"] == "done" and done["eta_seconds"] == 0
    assert comparable(done["summary"]) == comparable(direct)
    assert done["rows_read"] == direct["rows_in"] == 297
    assert done["distinct_addresses"] == direct["distinct_addresses"]
    assert [s["name"] for s in done["stages"]] == ["read", "domains", "write"]
    assert all(s["done"] == s["total"] for s in done["stages"])
    assert done["units"] == {
        "needed": SAMPLE_UNITS,
        "reserved": SAMPLE_UNITS,
        "charged": SAMPLE_UNITS,
        "returned": 0,
    }
    assert done["summary"]["output"] == "list.clean.parquet"  # a name, not a path of the server

    files = seen["files"]
    assert all(status == 200 for status, _, _ in files.values())
    direct_csv = (tmp_path / "direct" / "list.clean.csv").read_bytes()
    assert files["format=csv"][1] == direct_csv  # byte for byte
    assert files["format=csv"][2]["Content-Disposition"].startswith(
        'attachment; filename="list.clean.csv"'
    )
    parquet = pl.read_parquet(io.BytesIO(files["format=parquet"][1]))
    expected = pl.read_csv(io.BytesIO(direct_csv), infer_schema=False)
    assert parquet.get_column("VERDICT").to_list() == expected.get_column("VERDICT").to_list()
    sheet = openpyxl.load_workbook(io.BytesIO(files["format=xlsx"][1]), read_only=True).active
    assert sheet is not None and sheet.max_row == 298  # the header and every row
    valid = csv_rows(files["format=csv&verdict=valid"][1])
    assert valid == csv_rows((tmp_path / "direct" / "list.clean.valid.csv").read_bytes())
    assert {row["VERDICT"] for row in valid} == {"Valid"}
    assert files["format=rejects"][1].startswith(b"line,reason,raw")
    code, page, headers = seen["report"]
    assert code == 200 and b"<html" in page
    assert "script-src" not in headers["Content-Security-Policy"]

    # Every answer shows the /api/email counter the job charged (polls cost nothing).
    polled = seen["polled"]
    assert all(h in polled.headers for h in RATE_HEADERS)
    assert polled.headers["X-RateLimit-Limit"] == "1000"
    assert polled.remaining == 1000 - SAMPLE_UNITS


def test_addresses_sent_as_json_are_a_list(live: Live) -> None:
    secret, url = live.key(), live.url
    addresses = ["john.doe@gmial.com", "JOHN.DOE@gmial.com", "not an address", "a,b@x.org"]

    async def scenario() -> tuple[dict[str, Any], bytes]:
        async with session() as s:
            created = await post_job(s, url, secret, {"addresses": addresses, "split": True})
            assert created.status == 202, created.text
            done = await wait_for(s, url, secret, created.json["id"])
            _, data, _ = await download(s, url, secret, f"{done['url']}/result?format=csv")
            return done, data

    done, data = run(scenario())
    assert done["state"] == "done", done
    rows = csv_rows(data)
    assert [r["Email Address"] for r in rows] == addresses  # as sent, in order
    assert [r["DUPLICATE"] for r in rows] == ["false", "true", "false", "false"]
    assert done["units"]["needed"] == 1  # one distinct address whose syntax passes
    assert rows[0]["SUGGESTION"] == "john.doe@gmail.com"


def test_a_preview_reads_the_list_as_a_job_would_and_keeps_nothing(live: Live) -> None:
    secret, url = live.key("default"), live.url
    before = live.job_folders()
    head = SAMPLE_CSV.read_bytes()[:600].rsplit(b"\n", 1)[0] + b"\n"

    async def scenario() -> Any:
        async with session() as s:
            reply = await fetch(
                s, "POST", f"{url}/api/jobs/preview", data=form(data=head), headers=bearer(secret)
            )
            listing = await fetch(s, "GET", f"{url}/api/jobs", headers=bearer(secret))
            return reply, listing

    reply, listing = run(scenario())
    assert reply.status == 200, reply.text
    found = reply.json
    assert found["email_column"] == "Email Address"
    assert found["columns"][:4] == ["id", "first_name", "last_name", "Email Address"]
    assert found["preview"][0][3] == "owner@parkedsite.net"
    assert all(isinstance(cell, str) for row in found["preview"] for cell in row)
    assert found["units_left"] == 100
    assert listing.json["jobs"] == []
    assert live.job_folders() == before


# (options, the list's bytes: None for the sample) -> the refusal
REFUSED = [
    ({"encoding": "klingon"}, None, "invalid_parameter", 400),
    ({"email_column": ["Email Address", "Email Address"]}, None, "conflicting_parameters", 400),
    ({"email_column": ["Email Address", "nope"]}, None, "unreadable_list", 422),
    ({"header_row": "0"}, None, "invalid_parameter", 400),
    ({"verify": "smtp"}, None, "invalid_parameter", 400),
    ({"split": "maybe"}, None, "invalid_parameter", 400),
    ({"callback_url": "ftp://x.org/"}, None, "invalid_parameter", 400),
    ({"email_column": "nope"}, None, "unreadable_list", 422),
    ({}, b"", "unreadable_list", 422),
    ({}, b"\x89PNG\r\n\x1a\n" + b"\0" * 64, "unreadable_list", 422),
]


def test_a_list_clean_refuses_is_refused_before_any_work(live: Live) -> None:
    secret, url = live.key(), live.url
    before = live.job_folders()

    async def scenario() -> tuple[list[Any], Any]:
        async with session() as s:
            replies = [
                await post_job(s, url, secret, form(data=data, **fields))
                for fields, data, _, _ in REFUSED
            ]
            listing = await fetch(s, "GET", f"{url}/api/jobs", headers=bearer(secret))
            return replies, listing

    replies, listing = run(scenario())
    for (fields, _, code, status), reply in zip(REFUSED, replies, strict=True):
        assert (reply.status, reply.json["code"]) == (status, code), (fields, reply.text)
    assert listing.json["jobs"] == []
    assert live.job_folders() == before  # the uploads are gone too


def test_the_reason_is_cleans_own(
    live: Live, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same sentence as the command line's for the same refusal (the list named as its
    user named it)."""
    from pipeline.core.errors import InputError

    (tmp_path / "list.csv").write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError) as refused:
        clean_directly(live.env, live.config, Path("list.csv"), tmp_path / "out.parquet")
    secret, url = live.key(), live.url

    async def scenario() -> Any:
        async with session() as s:
            return await post_job(s, url, secret, form(data=b""))

    assert run(scenario()).json["detail"] == str(refused.value)


def test_a_job_over_the_quota_is_refused_before_a_unit_is_spent(live: Live) -> None:
    secret, url = live.key("small"), live.url

    async def scenario() -> tuple[dict[str, Any], Any, Any]:
        async with session() as s:
            for n in range(3):  # three units used by /api/email first
                await fetch(
                    s, "GET", f"{url}/api/email?email=a{n}@gmail.com", headers=bearer(secret)
                )
            created = await post_job(s, url, secret, form())
            failed = await wait_for(s, url, secret, created.json["id"])
            email = await fetch(
                s, "GET", f"{url}/api/email?email=b@gmail.com", headers=bearer(secret)
            )
            return failed, email, created

    failed, email, created = run(scenario())
    assert created.status == 202
    assert failed["state"] == "failed"
    problem = failed["error"]
    assert (problem["status"], problem["code"]) == (429, "quota_exceeded")
    assert f"needs {SAMPLE_UNITS} units" in problem["detail"]
    assert "97 of 100 are left" in problem["detail"]
    assert failed["units"] == {"needed": SAMPLE_UNITS, "reserved": 0, "charged": 0, "returned": 0}
    assert email.status == 200 and email.remaining == 96  # nothing of the job was charged


def test_a_key_with_nothing_left_is_refused_before_its_upload(live: Live) -> None:
    secret, url = live.key("one"), live.url

    async def scenario() -> Any:
        async with session() as s:
            await fetch(s, "GET", f"{url}/api/email?email=a@gmail.com", headers=bearer(secret))
            return await post_job(s, url, secret, form())

    reply = run(scenario())
    assert (reply.status, reply.json["code"]) == (429, "quota_exceeded")
    assert int(reply.headers["Retry-After"]) > 0
    assert reply.remaining == 0


def test_every_jobs_endpoint_needs_a_key(live: Live) -> None:
    url = live.url
    job = "j_" + "A" * 22

    async def scenario() -> list[Any]:
        async with session() as s:
            return [
                await fetch(s, "POST", f"{url}/api/jobs", data=form()),
                await fetch(s, "POST", f"{url}/api/jobs/preview", data=form()),
                await fetch(s, "GET", f"{url}/api/jobs"),
                await fetch(s, "GET", f"{url}/api/jobs/{job}"),
                await fetch(s, "DELETE", f"{url}/api/jobs/{job}"),
                await fetch(s, "GET", f"{url}/api/jobs/{job}/files"),
                await fetch(s, "GET", f"{url}/api/jobs/{job}/result"),
                await fetch(s, "GET", f"{url}/api/jobs/{job}/report"),
                await fetch(s, "GET", f"{url}/api/jobs?apikey=lc_x"),  # never in a URL
                await fetch(s, "GET", f"{url}/api/jobs", headers=bearer("lc_unknown")),
            ]

    for reply in run(scenario()):
        assert (reply.status, reply.json["code"]) == (401, "invalid_api_key"), reply.text
        assert reply.headers["WWW-Authenticate"] == 'Bearer error="invalid_token"'
        assert all(h in reply.headers for h in RATE_HEADERS)


def test_two_keys_never_see_each_others_jobs(live: Live) -> None:
    mine, theirs, url = live.key(), live.key(), live.url

    async def scenario() -> dict[str, Any]:
        async with session() as s:
            created = await post_job(s, url, mine, form())
            job = created.json["id"]
            await wait_for(s, url, mine, job)
            links = await fetch(s, "GET", f"{url}/api/jobs/{job}/files", headers=bearer(mine))
            other = await post_job(s, url, theirs, {"addresses": ["a@gmail.com"]})
            await wait_for(s, url, theirs, other.json["id"])
            their_links = await fetch(
                s, "GET", f"{url}/api/jobs/{other.json['id']}/files", headers=bearer(theirs)
            )
            token = their_links.json["files"][0]["url"].split("token=")[1]
            seen = {
                "get": await fetch(s, "GET", f"{url}/api/jobs/{job}", headers=bearer(theirs)),
                "files": await fetch(
                    s, "GET", f"{url}/api/jobs/{job}/files", headers=bearer(theirs)
                ),
                "result": await fetch(
                    s, "GET", f"{url}/api/jobs/{job}/result", headers=bearer(theirs)
                ),
                "delete": await fetch(s, "DELETE", f"{url}/api/jobs/{job}", headers=bearer(theirs)),
                "list": await fetch(s, "GET", f"{url}/api/jobs", headers=bearer(theirs)),
                "their_token": await fetch(s, "GET", f"{url}/api/jobs/{job}/result?token={token}"),
                "mine": await fetch(s, "GET", f"{url}/api/jobs/{job}", headers=bearer(mine)),
            }
            seen["links"] = links
            return seen

    seen = run(scenario())
    for name in ("get", "files", "result", "delete"):
        assert (seen[name].status, seen[name].json["code"]) == (404, "not_found"), name
    assert [j["id"] for j in seen["list"].json["jobs"]] != [] and all(
        j["id"] != seen["mine"].json["id"] for j in seen["list"].json["jobs"]
    )
    assert (seen["their_token"].status, seen["their_token"].json["code"]) == (401, "invalid_token")
    assert seen["mine"].json["state"] == "done"  # their DELETE did nothing


def test_download_links_open_their_file_only_and_expire(live: Live) -> None:
    secret, url = live.key(), live.url

    async def scenario() -> dict[str, Any]:
        async with session() as s:
            created = await post_job(s, url, secret, form(split="true"))
            job = created.json["id"]
            await wait_for(s, url, secret, job)
            links = (
                await fetch(s, "GET", f"{url}/api/jobs/{job}/files", headers=bearer(secret))
            ).json
            by_file = {f["file"]: f["url"] for f in links["files"]}
            csv_url, xlsx_url = by_file["result:csv:all"], by_file["result:xlsx:valid"]
            token = csv_url.split("token=")[1]
            seen = {
                "csv": await download(s, url, None, csv_url),
                "xlsx": await download(s, url, None, xlsx_url),
                "report": await download(s, url, None, by_file["report"]),
                "other_file": await download(
                    s, url, None, f"/api/jobs/{job}/result?format=parquet&token={token}"
                ),
                "forged": await download(s, url, None, csv_url[:-3] + "AAA"),
            }
            live.env.clock.advance(61)
            try:
                seen["expired"] = await download(s, url, None, csv_url)
            finally:
                live.env.clock.advance(-61)
            return {"links": links, **seen}

    seen = run(scenario())
    links = seen["links"]
    assert len(links["files"]) == 3 * 5 + 2  # 3 formats x (all + 4 verdicts), rejects, report
    assert all("token=" in f["url"] and "lc_" not in f["url"] for f in links["files"])
    assert seen["csv"][0] == seen["xlsx"][0] == seen["report"][0] == 200
    for name in ("other_file", "forged", "expired"):
        code, body, _ = seen[name]
        assert (code, json.loads(body)["code"]) == (401, "invalid_token"), name


def test_a_job_reads_the_header_below_title_rows_and_checks_every_address_column(
    live: Live, tmp_path: Path
) -> None:
    """header_row and email_column given twice are clean's --header-row and --email-column
    given twice: the same rows, the same further columns' fields."""
    listed = tmp_path / "export.csv"
    rows = ["Contacts export,,", "made 2026-11-26,,", "Name,Work,Home"]
    rows += [f"P{n},p{n}@gmail.com,p{n}@yahoo.com" for n in range(40)]
    rows += ["Q,not an address,q@@hotmail.com", "R,r@gmial.com,"]
    listed.write_text("\n".join(rows) + "\n")
    secret, url = live.key("team"), live.url

    async def scenario() -> tuple[dict[str, Any], bytes]:
        async with session() as s:
            body = form(listed, name="export.csv", header_row="3", email_column=["Work", "Home"])
            created = await post_job(s, url, secret, body)
            assert created.status == 202, created.json
            job = created.json["id"]
            done = await wait_for(s, url, secret, job)
            _, data, _ = await download(s, url, secret, f"/api/jobs/{job}/result?format=csv")
            return done, data

    done, data = run(scenario())
    output = tmp_path / "direct" / "export.clean.csv"
    direct = clean_directly(
        live.env, live.config, listed, output, email_column="Work", header_row=3, further=("Home",)
    )
    assert done["state"] == "done"
    cached = {"dns_queries", "cache_hits"}  # the service's cache has met these domains before
    assert comparable(done["summary"]).keys() - cached == comparable(direct).keys() - cached
    assert {k: v for k, v in comparable(done["summary"]).items() if k not in cached} == {
        k: v for k, v in comparable(direct).items() if k not in cached
    }
    assert data.decode().splitlines()[:2] == output.read_text().splitlines()[:2]
    assert data == output.read_bytes()
    header = csv_rows(data)[0]
    assert [k for k in header if k.startswith("Home")]  # the further column's fields
    assert done["rows_read"] == direct["rows_in"] == 44  # the two title rows are rejects


def test_header_row_and_email_column_clean_would_refuse_are_refused(live: Live) -> None:
    secret, url = live.key("team"), live.url

    async def scenario() -> list[Any]:
        async with session() as s:
            return [
                await post_job(s, url, secret, form(header_row="0")),
                await post_job(s, url, secret, form(header_row="first")),
                await post_job(s, url, secret, form(email_column=["Email", "Email"])),
                await post_job(s, url, secret, form(email_column=["Email Address", "Nope"])),
            ]

    zero, word, twice, missing = run(scenario())
    assert zero.status == word.status == 400 and "counts lines from 1" in zero.json["detail"]
    assert twice.status in (400, 409) and "twice" in twice.json["detail"]
    assert missing.status in (400, 422) and "Nope" in missing.json["detail"]
