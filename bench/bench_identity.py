"""Measure who the contact lookup answers with, on a population whose right answers are known.

    python bench/bench_identity.py [--http] [--keep DIR] [--json FILE]

Builds the labelled population of :mod:`worlds.people.population` (fixed seed) into a
temporary directory (or --keep DIR), imports ``contacts.csv`` into a fresh ``ContactStore``, applies
``optouts.csv`` (``erase`` / ``suppress``), imports ``contacts_update.csv``, then runs every
search through ``ContactStore.search`` and, with --http, also through a real ``listclean serve``
on 127.0.0.1 over HTTP (``GET /api/find``).

Scoring (:mod:`worlds.people.scoring`). Every field of an answer (name, address,
phone, email, company) is traced to the people whose rows carried that value, normalized
exactly as the import normalizes it; an answer is correct, about the wrong person, a mix of
people, or missing (not found), and no answer where none is right is a correct refusal.

An answer where no answer was right (an erased person found, one member of a household found
by its landline) counts as a wrong person; how many answers reveal an erased or opted-out person
is counted apart.

Prints a Markdown table per search kind and per group of the person searched for, the totals,
the wrong-person rate over all searches, and what the store holds after the first import (in a
store of its own) and at the end: records whose fields mix two or more people, present people
with no record of their own (merged into someone else's) and people split over several records
(which makes a name search ambiguous between two records of one person). --json writes the
numbers. Takes about 10 s in process on 2 cores, twice that with --http.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import aiohttp

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the test worlds

from pipeline.core.config import ContactsConfig
from pipeline.core.contacts.store import ContactStore
from pipeline.core.contacts.types import Contact, Outcome
from worlds.people.population import Population, Search, SearchKind, build, write
from worlds.people.scoring import (
    REGION,
    Answer,
    Owners,
    StoreState,
    Verdict,
    answer_of,
    inspect,
    judge,
    load,
    revealed,
)

HTTP_CONCURRENCY = 4


def load_store(population: Population, paths: dict[str, Path], db: Path) -> dict[str, Any]:
    """Import, opt out, import again (timing the first import); what each step reported."""
    with ContactStore(db, ContactsConfig(region=REGION)) as store:
        started = time.perf_counter()
        report = load(store, population, paths)
        report["seconds"] = round(time.perf_counter() - started, 2)
    return report


def search_in_process(
    db: Path, searches: Sequence[Search]
) -> tuple[list[tuple[Answer | None, str]], dict[str, dict[str, set[int]]]]:
    """Every search's answer and outcome; and the SQL statements each search ran (counted
    with SQLite's trace callback, leaving out those FTS5 runs on its own tables), as the sets
    of counts seen per term kind and outcome."""
    answers: list[tuple[Answer | None, str]] = []
    work: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
    statements: list[str] = []
    with ContactStore(db, ContactsConfig(region=REGION)) as store:
        store._db.run(lambda connection: connection.set_trace_callback(statements.append))
        for search in searches:
            statements.clear()
            lookup = store.search(search.term)
            answers.append((_from_contact(lookup.contact), lookup.outcome.value))
            own = [s for s in statements if not s.startswith("--") and "'main'." not in s]
            work[lookup.kind.value][lookup.outcome.value].add(len(own))
    return answers, work


def work_line(work: dict[str, dict[str, set[int]]]) -> str:
    parts = []
    for kind, by_outcome in work.items():
        seen = ", ".join(
            f"{outcome} {'/'.join(map(str, sorted(n)))}"
            for outcome, n in sorted(by_outcome.items())
        )
        parts.append(f"{kind}: {seen}")
    return "SQL statements per search, by term kind and outcome: " + "; ".join(parts) + "."


def _from_contact(c: Contact | None) -> Answer | None:
    if c is None:
        return None
    return answer_of(c.name, c.address, c.phone, c.email, c.company)


# --------------------------------------------------------------------------- over HTTP


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def serve(db: Path, work: Path) -> Iterator[str]:
    """``listclean serve`` on 127.0.0.1 over *db*, no quota in the way; its base URL."""
    config = work / "service.toml"
    config.write_text(
        f"[contacts]\ndb = {json.dumps(str(db))}\nregion = {json.dumps(REGION)}\n\n"
        f"[service]\ndb = {json.dumps(str(work / 'service.sqlite'))}\n\n"
        "[anonymous]\nfind_per_day = 1000000\n"
    )
    port = free_port()
    command = [sys.executable, "-m", "pipeline", "serve", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--config", str(config), "--offline"]
    command += ["--cache-dir", str(work / "cache")]
    log = (work / "serve.log").open("w")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_for(port, server, work / "serve.log")
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


def _wait_for(port: int, server: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            sys.exit(f"listclean serve exited with {server.returncode}:\n{log.read_text()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        time.sleep(0.1)
    sys.exit(f"listclean serve did not listen on port {port} within 60 s:\n{log.read_text()}")


def search_over_http(base: str, searches: Sequence[Search]) -> list[Answer | None]:
    async def run() -> list[Answer | None]:
        gate = asyncio.Semaphore(HTTP_CONCURRENCY)
        async with aiohttp.ClientSession() as session:

            async def one(term: str) -> Answer | None:
                async with gate:
                    return await _find(session, base, term)

            return await asyncio.gather(*(one(s.term) for s in searches))

    return asyncio.run(run())


async def _find(session: aiohttp.ClientSession, base: str, term: str) -> Answer | None:
    params = {"search_term": term, "find_Contact": "true"}
    async with session.get(f"{base}/api/find", params=params) as response:
        if response.status == 404:
            return None
        if response.status != 200:
            text = await response.text()
            raise RuntimeError(f"/api/find {term!r} answered HTTP {response.status}: {text}")
        body = await response.json()
    job = body.get("employment") or {}
    return answer_of(body["name"], body["address"], body["phone"], body["email"], job["company"])


# --------------------------------------------------------------------------- tables

COLUMNS = tuple(Verdict)


def tally(
    searches: Sequence[Search], verdicts: Sequence[Verdict], key: Callable[[Search], str]
) -> dict[str, Counter[Verdict]]:
    table: dict[str, Counter[Verdict]] = defaultdict(Counter)
    for search, verdict in zip(searches, verdicts, strict=True):
        table[key(search)][verdict] += 1
    return dict(table)


def markdown(title: str, table: dict[str, Counter[Verdict]]) -> str:
    names = [v.value for v in COLUMNS] + ["precision", "found"]
    head = f"| {title} | searches | " + " | ".join(names) + " |"
    lines = [head, "|---" + "|---:" * (len(COLUMNS) + 3) + "|"]
    total: Counter[Verdict] = Counter()
    for name, counts in table.items():
        total += counts
        lines.append(_line(name, counts))
    lines.append(_line("**total**", total))
    return "\n".join(lines)


def _line(name: str, counts: Counter[Verdict]) -> str:
    """A row: the counts, then precision (correct among the answers given to searches that
    have a right answer) and found (correct among the searches that have one)."""
    cells = " | ".join(str(counts[v]) for v in COLUMNS)
    right = counts[Verdict.CORRECT]
    answered = right + counts[Verdict.WRONG_PERSON] + counts[Verdict.MIXED]
    has_answer = right + counts[Verdict.NOT_FOUND]
    precision = f"{right / answered:.1%}" if has_answer and answered else "-"
    found = f"{right / has_answer:.1%}" if has_answer else "-"
    return f"| {name} | {sum(counts.values())} | {cells} | {precision} | {found} |"


def rates(verdicts: Sequence[Verdict]) -> dict[str, float]:
    counts, n = Counter(verdicts), len(verdicts)
    return {
        "searches": n,
        "wrong_person_rate": counts[Verdict.WRONG_PERSON] / n,
        "wrong_or_mixed_rate": (counts[Verdict.WRONG_PERSON] + counts[Verdict.MIXED]) / n,
        "correct_rate": (counts[Verdict.CORRECT] + counts[Verdict.REFUSED]) / n,
    }


def report_verdicts(label: str, population: Population, verdicts: list[Verdict]) -> list[str]:
    searches = population.searches
    kinds = tally(searches, verdicts, lambda s: s.kind.value)
    by_kind: dict[str, Counter[Verdict]] = {k: kinds[k] for k in SearchKind if k in kinds}
    by_group = tally(searches, verdicts, lambda s: s.group.value)
    r = rates(verdicts)
    return [
        f"## {label}",
        "",
        markdown("search kind", by_kind),
        "",
        markdown("group searched for", dict(sorted(by_group.items()))),
        "",
        f"Wrong person: {r['wrong_person_rate']:.2%} of {r['searches']:,} searches; "
        f"wrong person or mixed answer: {r['wrong_or_mixed_rate']:.2%}; "
        f"right (correct or correct refusal): {r['correct_rate']:.2%}.",
        "",
    ]


def store_lines(label: str, state: StoreState, present: int) -> str:
    return (
        f"{label}: {state.records:,} records, {state.mixed:,} mixing two or more people; "
        f"{state.people_with_own_record:,} of {present:,} present people have a record of "
        f"their own ({present - state.people_with_own_record:,} have none, their rows were "
        f"merged into someone else's); {state.split:,} are split over two or more records."
    )


# --------------------------------------------------------------------------- main


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", action="store_true", help="also search through listclean serve")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="write the files and store here")
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the numbers as JSON")
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        work = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory()))
        result, text = run(work, http=args.http)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


def run(work: Path, *, http: bool) -> tuple[dict[str, Any], str]:
    started = time.perf_counter()
    population = build()
    paths = write(population, work / "population")
    db = work / "contacts.sqlite"
    for stale in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        stale.unlink(missing_ok=True)
    owners = Owners(population.rows + population.update_rows)
    present = [p.id for p in population.people if p.status == "present"]
    first = _first_import_state(population, paths, work, owners, present)
    steps = load_store(population, paths, db)
    final = inspect(db, owners, present)
    answers, statements = search_in_process(db, population.searches)
    verdicts = [judge(s, a, owners) for s, (a, _) in zip(population.searches, answers, strict=True)]
    lines = [
        _composition(population),
        *report_verdicts("ContactStore.search", population, verdicts),
    ]
    leaks = revealed(population, [a for a, _ in answers], owners)
    lines += [f"Answers revealing an erased or opted-out person: {leaks}.", ""]
    lines += [_outcomes(population.searches, verdicts, [o for _, o in answers])]
    lines += [work_line(statements), ""]
    lines += [store_lines("After the first import", first, len(present))]
    lines += [store_lines("At the end (opt-outs, second import)", final, len(present)), ""]
    lines += [f"Import and opt-outs: {json.dumps(steps)}"]
    result: dict[str, Any] = {"steps": steps, "in_process": _numbers(population, verdicts)}
    result["in_process"]["reveals_opted_out"] = leaks
    result["store"] = {"after_first_import": vars(first), "at_end": vars(final)}
    if http:
        with serve(db, work) as base:
            over_http = search_over_http(base, population.searches)
        http_verdicts = [
            judge(s, a, owners) for s, a in zip(population.searches, over_http, strict=True)
        ]
        lines += ["", *report_verdicts("listclean serve, GET /api/find", population, http_verdicts)]
        differ = sum(1 for a, b in zip(verdicts, http_verdicts, strict=True) if a != b)
        http_leaks = revealed(population, over_http, owners)
        lines += [f"Answers revealing an erased or opted-out person: {http_leaks}."]
        lines += [f"Verdicts that differ between in-process and HTTP: {differ}."]
        result["http"] = _numbers(population, http_verdicts) | {"differ_from_in_process": differ}
    lines += [f"\nrun took {time.perf_counter() - started:.1f} s"]
    return result, "\n".join(lines)


def _first_import_state(
    population: Population, paths: dict[str, Path], work: Path, owners: Owners, present: list[str]
) -> StoreState:
    """The store right after the first import, before any opt-out, in a store of its own."""
    db = work / "first_import.sqlite"
    for stale in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        stale.unlink(missing_ok=True)
    with ContactStore(db, ContactsConfig(region=REGION)) as store:
        store.import_file(paths["contacts"], "contacts.csv")
    return inspect(db, owners, present)


def _numbers(population: Population, verdicts: list[Verdict]) -> dict[str, Any]:
    by_kind = tally(population.searches, verdicts, lambda s: s.kind.value)
    return rates(verdicts) | {
        "by_kind": {k: {v.value: c[v] for v in COLUMNS} for k, c in by_kind.items()}
    }


def _outcomes(searches: Sequence[Search], verdicts: list[Verdict], outcomes: list[str]) -> str:
    """Why searches found nothing: the store's outcome behind each 'not found'."""
    why = Counter(o for v, o in zip(verdicts, outcomes, strict=True) if v is Verdict.NOT_FOUND)
    parts = ", ".join(f"{Outcome(k).value} {n}" for k, n in why.most_common())
    return f"Not found, by the store's outcome: {parts or 'none'}.\n"


def _composition(population: Population) -> str:
    people = Counter((p.group.value, p.status.value) for p in population.people)
    groups = sorted({g for g, _ in people})
    statuses = ("present", "erased", "suppressed", "absent")
    lines = ["## Population", "", "| group | " + " | ".join(statuses) + " |"]
    lines.append("|---" + "|---:" * len(statuses) + "|")
    for group in groups:
        lines.append(f"| {group} | " + " | ".join(str(people[group, s]) for s in statuses) + " |")
    lines += [
        "",
        f"{len(population.people):,} people, {len(population.rows):,} rows in contacts.csv, "
        f"{len(population.update_rows):,} in contacts_update.csv, {len(population.optouts)} "
        f"opt-out requests, {len(population.searches):,} searches.",
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
