"""Uploads: bounded by a size and a transfer rate (not by the body timeout), their names made
safe, their options read as clean's."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from pipeline.service.errors import ConflictingParameters, InvalidParameter
from pipeline.service.jobs.http.uploads import options_of, safe_name, stem_of
from tests.conftest import SAMPLE_CSV
from tests.service.conftest import Env, fetch, run
from tests.service.jobs.conftest import bearer, form, post_job, session, with_jobs
from tests.service.rawhttp import answer, connect

MODES = ("none", "smtp")


@pytest.mark.parametrize(
    ("given", "safe", "stem"),
    [
        ("list.csv", "list.csv", "list"),
        ("../../etc/passwd", "passwd", "passwd"),
        ("C:\\Users\\me\\Export 2024.csv.gz", "Export_2024.csv.gz", "Export_2024"),
        ("Liste für März.xlsx", "Liste_fur_Marz.xlsx", "Liste_fur_Marz"),
        (".hidden.csv", "hidden.csv", "hidden"),
        ("", "list", "list"),
        ("<script>.csv", "_script_.csv", "_script_"),
        ("名単.csv", "csv", "csv"),
    ],
)
def test_a_callers_file_name_is_made_safe(given: str, safe: str, stem: str) -> None:
    assert safe_name(given) == safe
    assert stem_of(given) == stem


def test_options_are_read_as_cleans() -> None:
    options = options_of(
        {"email_column": ["Mail"], "encoding": ["Windows-1252"], "split": ["true"], "x": ["1"]},
        MODES,
        "public",
        512,
    )
    assert options.email_columns == ("Mail",)
    assert options.encoding == "cp1252"
    assert options.split is True and options.verify is None


@pytest.mark.parametrize(
    ("fields", "refusal", "words"),
    [
        ({"verify": ["api"]}, InvalidParameter, "verify may be none or smtp"),
        ({"split": ["yes"]}, InvalidParameter, "split must be true or false"),
        ({"split": ["true", "true"]}, ConflictingParameters, "split appears 2 times"),
        ({"header_row": ["0"]}, InvalidParameter, "counts lines from 1"),
        ({"email_column": ["Mail", "Mail"]}, ConflictingParameters, "twice"),
        ({"sheet": ["x" * 600]}, InvalidParameter, "at most 512 characters"),
        ({"callback_url": ["http://user@x.org/"]}, InvalidParameter, "callback_url"),
    ],
)
def test_options_clean_would_refuse_are_refused(
    fields: dict[str, list[str]], refusal: type[Exception], words: str
) -> None:
    with pytest.raises(refusal, match=words):
        options_of(fields, MODES, "public", 512)


def test_no_callback_is_taken_when_callbacks_are_off() -> None:
    with pytest.raises(InvalidParameter, match="sends no callbacks"):
        options_of({"callback_url": ["https://example.org/hook"]}, MODES, "off", 512)


def test_over_the_size_or_the_rows_is_a_413_naming_the_limit_and_neither_form_nor_json_a_415(
    env: Env, tmp_path: Path
) -> None:
    config = with_jobs(env.config(), tmp_path, max_upload_bytes=10_000, max_rows=100)
    _, secret = env.key("starter")
    small = b"email\n" + b"".join(f"a{n}@gmail.com\n".encode() for n in range(150))

    async def scenario() -> list[Any]:
        async with env.serving(config) as url, session() as s:
            text = {**bearer(secret), "Content-Type": "text/csv"}
            return [
                await post_job(s, url, secret, form()),  # 16 kB
                await post_job(s, url, secret, form(data=small)),  # 151 rows, 2 kB
                await post_job(s, url, secret, {"addresses": ["a@b.org"] * 2_000}),
                await fetch(s, "POST", f"{url}/api/jobs", data=small, headers=text),
            ]

    big, many, json_body, neither = run(scenario())
    assert (neither.status, neither.json["code"]) == (415, "unsupported_media_type")
    assert (big.status, big.json["code"]) == (413, "too_large")
    assert "10,000 bytes" in big.json["detail"] and "max_upload_bytes" in big.json["detail"]
    assert (many.status, many.json["code"]) == (413, "too_large")
    assert "150 rows" in many.json["detail"] and "100" in many.json["detail"]
    assert json_body.status == 413


def test_an_upload_is_bounded_by_its_pace_not_by_the_body_timeout(env: Env, tmp_path: Path) -> None:
    """A slow but steady upload outlasts the body timeout and is taken; one that stalls below
    the minimum rate is cut off with a 408."""
    config = with_jobs(
        env.config(body_timeout=0.5), tmp_path, min_upload_rate=2_000, upload_window=0.4
    )
    _, secret = env.key("starter")
    boundary = "x" * 20
    payload = (
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="list.csv"'
            f"\r\nContent-Type: text/csv\r\n\r\n"
        ).encode()
        + SAMPLE_CSV.read_bytes()[:4000]
        + f"\r\n--{boundary}--\r\n".encode()
    )

    async def upload(url: str, rate: float, most: int | None = None) -> Any:
        conn = await connect(url)
        head = (
            f"POST /api/jobs/preview HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {secret}\r\n"
            f"Content-Type: multipart/form-data; boundary={boundary}\r\n"
            f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
        ).encode()
        conn[1].write(head)
        step = 500
        for at in range(0, most or len(payload), step):
            conn[1].write(payload[at : at + step])
            await conn[1].drain()
            await asyncio.sleep(step / rate)
        reply = await answer(conn, 15)
        conn[1].close()
        return reply

    async def scenario() -> tuple[Any, Any]:
        async with env.serving(config) as url:
            steady = await upload(url, 4_000)  # about 1.1 s for 4.4 kB: past body_timeout
            stalled = await upload(url, 600, most=1_000)  # then nothing more
            return steady, stalled

    steady, stalled = run(scenario())
    assert steady.status == 200, steady.body
    assert stalled.status == 408 and stalled.json["code"] == "request_timeout"
    assert "2,000 bytes a second" in stalled.json["detail"]
