"""/api/find on the real server over loopback: classification, the uniform 404, privacy, quotas,
and the audit log."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import time
from pathlib import Path

import aiohttp
import pytest

from pipeline.core.config import AnonymousConfig, ContactsConfig
from pipeline.core.contacts.store import ContactStore
from pipeline.service.settings import PlanConfig
from tests.conftest import REPO
from tests.service.conftest import PROBLEM_KEYS, Env, Reply, create_key, fetch, run, service_config

CONTACTS = REPO / "sample_data" / "contacts.csv"


@pytest.fixture
def people(env: Env) -> Path:
    path = env.cache.with_name("contacts.sqlite")
    with ContactStore(path, ContactsConfig()) as store:
        assert store.import_file(CONTACTS, "sample").imported > 2900
    return path


def ask(env: Env, *queries: dict[str, str], method: str = "GET", **extra: object) -> list[Reply]:
    config = service_config(
        env.dns.address, anonymous=AnonymousConfig(email_per_day=1, find_per_day=1000)
    )

    async def scenario() -> list[Reply]:
        async with env.serving(config) as url, aiohttp.ClientSession() as s:
            replies = []
            for query in queries:
                if method == "GET":
                    replies.append(await fetch(s, "GET", f"{url}/api/find", params=query, **extra))
                else:
                    replies.append(await fetch(s, "POST", f"{url}/api/find", json=query, **extra))
            return replies

    return run(scenario())


def search(term: str) -> dict[str, str]:
    return {"search_term": term, "find_Contact": "true"}


@pytest.mark.parametrize(
    ("term", "name"),
    [
        (" Marisol.Quenby@MADEUP-MAIL.net ", "Marisol Quenby"),  # email: exact, normalized
        ("(614) 555-0177", "Emrys Caldwater"),  # phone: E.164
        ("+1 614 555 0177", "Emrys Caldwater"),
        ("+44 7700 900999", "Tobias Quill Wrenfield"),
        ("Jordan Ellery Quillfeather", "Jordan Ellery"),  # name narrowed by company
        ("Rosalind Vantreece Marrowgate", "Rosalind Vantreece"),  # name narrowed by city
        ("Zoe Aberlund", "Zoë Åberlund"),
        ("Tobias Wrenfield", "Tobias Quill Wrenfield"),
    ],
)
def test_each_kind_of_term_finds_its_person(env: Env, people: Path, term: str, name: str) -> None:
    (reply,) = ask(env, search(term))
    assert reply.status == 200, reply.text
    record = reply.json
    assert record["name"] == name
    assert set(record) == {"name", "address", "phone", "email", "employment"}
    assert set(record["employment"]) == {"company", "title"}  # type: ignore[arg-type]


def test_post_bodies_work_too(env: Env, people: Path) -> None:
    (reply,) = ask(
        env, {"search_term": "emrys.c@notreal-inbox.org", "find_Contact": True}, method="POST"
    )  # type: ignore[dict-item]
    assert reply.status == 200 and reply.json["phone"] == "+16145550177"


def test_no_match_ambiguity_and_suppression_answer_the_same_404(env: Env, people: Path) -> None:
    with ContactStore(people, ContactsConfig()) as store:
        assert store.suppress(email="daliacarrow@copperkettle.madeup-biz.net").records >= 1
    nobody, ambiguous, opted_out = ask(
        env,
        search("nobody.at.all@nowhere-madeup.net"),
        search("Jordan Ellery"),
        search("daliacarrow@copperkettle.madeup-biz.net"),
    )
    for reply in (nobody, ambiguous, opted_out):
        assert reply.status == 404
        assert set(reply.json) == PROBLEM_KEYS and reply.json["code"] == "not_found"
    assert nobody.json == ambiguous.json == opted_out.json
    assert set(nobody.headers) == set(opted_out.headers) == set(ambiguous.headers)
    # The opted-out person is not found by name either.
    (by_name,) = ask(env, search("Dalia Carrow Copperwick"))
    assert by_name.status == 404 and by_name.json == nobody.json


def test_erased_people_are_gone_and_stay_gone(env: Env, people: Path) -> None:
    with ContactStore(people, ContactsConfig()) as store:
        assert store.erase(phone="(614) 555-0177").records == 1
        store.import_file(CONTACTS, "sample again")  # a re-import must not bring them back
    (reply,) = ask(env, search("Emrys Caldwater"))
    assert reply.status == 404


@pytest.mark.parametrize(
    ("query", "code", "words"),
    [
        ({"search_term": "x"}, "missing_parameter", "find_Contact=true"),
        ({"search_term": "x", "find_contact": "true"}, "missing_parameter", "case-sensitive"),
        ({"search_term": "x", "find_Contact": "yes"}, "invalid_parameter", "the text true"),
        ({"find_Contact": "true"}, "missing_parameter", "search_term"),
        ({"search_term": "  ", "find_Contact": "true"}, "missing_parameter", "search_term"),
    ],
)
def test_parameter_errors(
    env: Env, people: Path, query: dict[str, str], code: str, words: str
) -> None:
    (reply,) = ask(env, query)
    assert reply.status == 400 and reply.json["code"] == code
    assert words in str(reply.json["detail"])


def test_quotas_have_their_own_counters_and_misses_count(env: Env, people: Path) -> None:
    _key, secret = create_key(env.db, "default")  # 5 finds a month
    config = service_config(env.dns.address)
    headers = {"Authorization": f"Bearer {secret}"}

    async def scenario() -> list[Reply]:
        async with env.serving(config) as url, aiohttp.ClientSession() as s:
            replies = [
                await fetch(
                    s, "GET", f"{url}/api/email", params={"email": "a@gmail.com"}, headers=headers
                )
            ]
            for term in ["nobody@nowhere-madeup.net"] * 5 + ["Zoe Aberlund"]:
                replies.append(
                    await fetch(s, "GET", f"{url}/api/find", params=search(term), headers=headers)
                )
            return replies

    email, *finds = run(scenario())
    assert email.headers["RateLimit-Policy"].startswith('"email-month";q=100')
    assert [r.status for r in finds] == [404] * 5 + [429]  # misses counted; the 6th is refused
    assert finds[0].headers["RateLimit-Policy"].startswith('"find-month";q=5')
    assert finds[4].headers["X-RateLimit-Remaining"] == "0"
    assert "Retry-After" in finds[5].headers


def test_anonymous_callers_get_one_search_a_day(env: Env, people: Path) -> None:
    async def scenario() -> list[Reply]:
        async with env.serving() as url, aiohttp.ClientSession() as s:
            return [
                await fetch(s, "GET", f"{url}/api/find", params=search("Zoe Aberlund"))
                for _ in range(2)
            ]

    first, second = run(scenario())
    assert (first.status, second.status) == (200, 429)
    assert first.headers["RateLimit-Policy"] == '"find-day";q=1;w=86400'


def test_every_lookup_is_audited_without_the_term(env: Env, people: Path) -> None:
    terms = ["Zoe Aberlund", "nobody@nowhere-madeup.net", "Jordan Ellery"]
    ask(env, *(search(t) for t in terms))
    with ContactStore(people, ContactsConfig()) as store:
        records = store.audit_records()
    assert [r["outcome"] for r in records][-3:] == ["match", "no_match", "ambiguous"]
    text = repr(records)
    for term in terms:
        assert term.lower() not in text.lower()
    assert all(r["key_id"] == "anonymous" and r["client_ip"] == "127.0.0.1" for r in records[-3:])


def test_old_audit_records_are_purged_on_start(env: Env, people: Path) -> None:
    ask(env, search("Zoe Aberlund"))
    env.clock.now += 400 * 86400  # past the 365-day retention
    ask(env, search("Tobias Wrenfield"))
    with ContactStore(people, ContactsConfig()) as store:
        records = store.audit_records()
    assert len(records) == 1


def test_plans_set_the_find_quota(env: Env, people: Path) -> None:
    plans = {"tiny": PlanConfig(email_per_month=10, find_per_month=1)}
    _key, secret = create_key(env.db, "tiny")
    config = service_config(env.dns.address, plans=plans)
    headers = {"Authorization": f"Bearer {secret}"}

    async def scenario() -> list[Reply]:
        async with env.serving(config) as url, aiohttp.ClientSession() as s:
            return [
                await fetch(
                    s, "GET", f"{url}/api/find", params=search("Zoe Aberlund"), headers=headers
                )
                for _ in range(2)
            ]

    first, second = run(scenario())
    assert (first.status, second.status) == (200, 429)


def test_the_access_log_never_shows_the_search_term(
    env: Env, people: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level("INFO"):
        ask(env, search("Zoe Aberlund"))
    lines = [r.getMessage() for r in caplog.records if "/api/find" in r.getMessage()]
    assert lines and all("Aberlund" not in line and "search_term=***" in line for line in lines)


def test_the_contact_store_works_off_the_event_loop(env: Env, people: Path) -> None:
    """A lookup waiting on the store (here: another process holds its write lock, so the audit
    record waits) does not hold up other requests: /healthz is answered meanwhile."""
    config = service_config(env.dns.address, anonymous=AnonymousConfig(find_per_day=10))

    async def scenario() -> tuple[float, Reply, Reply]:
        async with env.serving(config) as url, aiohttp.ClientSession() as s:
            with contextlib.closing(sqlite3.connect(people, isolation_level=None)) as blocker:
                blocker.execute("BEGIN IMMEDIATE")
                started = time.monotonic()  # (this test shares the server's event loop)
                lookup = asyncio.create_task(
                    fetch(s, "GET", f"{url}/api/find", params=search("Tobias Wrenfield"))
                )
                await asyncio.sleep(0.3)
                health = await fetch(s, "GET", f"{url}/healthz")
                waited = time.monotonic() - started - 0.3
                blocker.execute("COMMIT")
            return waited, health, await lookup

    waited, health, found = run(scenario())
    assert health.status == 200
    assert waited < 1.0, f"/healthz waited {waited:.2f} s behind a contact lookup"
    assert found.status == 200 and found.json["name"] == "Tobias Quill Wrenfield"
