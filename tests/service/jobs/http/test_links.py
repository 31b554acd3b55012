"""Download links: a token opens the one file of the one job it was made for, until it expires."""

from __future__ import annotations

from pipeline.service.jobs.http.links import Links

LINKS = Links(b"s" * 32, ttl=600)
NOW = 1_800_000_000.0


def test_a_token_opens_its_file_until_it_expires() -> None:
    token = LINKS.token("j_1", "k_1", "result:csv:all", NOW)
    assert LINKS.opens(token, "j_1", "k_1", "result:csv:all", NOW + 599)
    assert not LINKS.opens(token, "j_1", "k_1", "result:csv:all", NOW + 601)
    assert LINKS.expires(token) == int(NOW + 600)


def test_a_token_opens_nothing_else() -> None:
    token = LINKS.token("j_1", "k_1", "result:csv:all", NOW)
    for job, key, file in (
        ("j_2", "k_1", "result:csv:all"),
        ("j_1", "k_2", "result:csv:all"),
        ("j_1", "k_1", "result:parquet:all"),
        ("j_1", "k_1", "report"),
    ):
        assert not LINKS.opens(token, job, key, file, NOW)
    assert not Links(b"t" * 32, 600).opens(token, "j_1", "k_1", "result:csv:all", NOW)


def test_a_token_cannot_be_stretched_or_made_up() -> None:
    token = LINKS.token("j_1", "k_1", "report", NOW)
    expires, mac = token.split(".")
    later = f"{int(expires) + 10_000}.{mac}"
    for forged in (later, "", ".", "x.y", f"{expires}.", "9" * 40 + "." + mac):
        assert not LINKS.opens(forged, "j_1", "k_1", "report", NOW)
