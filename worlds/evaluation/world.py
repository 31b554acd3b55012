"""A deterministic evaluation world with its truth: what verification should conclude, per address.

``generate(seed)`` builds, in about a second, a sandbox world (DNS zones and scripted mail
servers, format in :mod:`pipeline.sandbox.world`) of about 6,500 listed addresses over about 300
domains, and for each address the truth: would mail to it reach the person meant? Servers send
real replies from the corpus (:mod:`worlds.replies.corpus`). ``write(directory)`` writes
``world.json``, ``list.csv`` (one ``email`` column, in a shuffled but fixed order) and
``truth.csv`` (email, deliverable, class, reply, intended_domain).

Classes (``class`` column), and what is true of them:

* ``ok`` / ``no_such_user`` / ``disabled`` / ``full`` / ``full_552``: a server that tells the
  truth; only a disabled or missing mailbox is undeliverable. ``rate_limited_rcpt`` and
  ``transient_rcpt``: existing mailboxes the server defers (Gmail's 450 4.2.1 receiving rate...).
  ``exo_dbeb``: a Microsoft 365 tenant refusing an unknown recipient with 5.4.1 "Access denied".
* Servers that hide existence, deliverable exactly when the mailbox exists:
  ``sender_refused_rcpt`` (Postfix reject_unknown_sender_domain / reject_unverified_sender, Exim
  sender verification, all at RCPT), ``sender_refused_mail`` (refused at MAIL FROM, in words
  like "550 User unknown"), ``helo_refused_rcpt``, ``host_blocked_rcpt`` (IP/reputation blocks),
  ``ehlo_refused``, ``greeting_5xx``, ``greeting_421``, ``rcpt_421_close``,
  ``rate_limited_host``, ``greylisted``, ``unverifiable_provider`` (Yahoo/AOL, not probed).
* ``catch_all``: every address is accepted, listed ones deliverable; ``implicit_mx``: no MX, the
  domain's A record leads to a server that knows its mailboxes; ``near_provider``: real domains
  next to a provider's name (aon.com, hotmart.com), which must get no suggestion.
* Nowhere to deliver (never deliverable): ``nxdomain``, ``null_mx``, ``no_mail_records``,
  ``mx_ip_literal``, ``mx_nxdomain_hosts``, ``mx_no_address``, ``implicit_mx_private`` /
  ``_loopback`` / ``_reserved`` (127.0.0.1 is "loopback" here: no world server listens there,
  every world server sits on 127.0.0.2 and up), ``relay_denied`` (the MX refuses the domain).
* ``dns_temporary``: SERVFAIL, REFUSED or no answer; counted as deliverable (nothing says it
  is not, so it must never be Invalid).
* Typos, never deliverable, with ``intended_domain``: ``typo_squatted`` (one edit from a big
  provider, registered with a catch-all parking MX, not in known_typos.txt),
  ``typo_squatted_known`` (in it), ``typo_unregistered`` / ``typo_unregistered_known``
  (NXDOMAIN), ``typo_tld_misspelt`` (``ahoo.con``: a TLD fix alone gives the wrong domain).

Run ``python -m worlds.evaluation.world DIR`` to write the three files.
"""

from __future__ import annotations

import csv
import json
import random
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from worlds.evaluation.builder import Builder, TruthRow
from worlds.evaluation.providers import near_providers, providers, typos
from worlds.evaluation.scenarios import businesses, dns_cases, hidden_existence

SEED = 20240601
TRUTH_COLUMNS = ("email", "deliverable", "class", "reply", "intended_domain")


@dataclass(frozen=True)
class EvalWorld:
    world: dict[str, Any]  # the JSON object of world.json
    rows: tuple[TruthRow, ...]  # in list order

    def counts(self) -> Counter[str]:
        return Counter(row.cls for row in self.rows)

    def write(self, directory: Path) -> None:
        """world.json, list.csv and truth.csv in ``directory`` (created)."""
        directory.mkdir(parents=True, exist_ok=True)
        (directory / "world.json").write_text(json.dumps(self.world, indent=1), encoding="utf-8")
        with (directory / "list.csv").open("w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out)
            writer.writerow(["email"])
            writer.writerows([row.email] for row in self.rows)
        with (directory / "truth.csv").open("w", newline="", encoding="utf-8") as out:
            writer = csv.writer(out)
            writer.writerow(TRUTH_COLUMNS)
            for row in self.rows:
                deliverable = "true" if row.deliverable else "false"
                writer.writerow([row.email, deliverable, row.cls, row.reply, row.intended])


def generate(seed: int = SEED) -> EvalWorld:
    """The evaluation world for ``seed``; the same seed always gives the same world."""
    builder = Builder(random.Random(seed))
    providers(builder)
    businesses(builder)
    hidden_existence(builder)
    dns_cases(builder)
    near_providers(builder)
    typos(builder)  # last: it avoids every name the world already has
    rows = list(builder.rows)
    builder.rng.shuffle(rows)
    world = {"latency_ms": 0, "zones": builder.zones, "smtp": builder.smtp}
    return EvalWorld(world, tuple(rows))


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m worlds.evaluation.world OUTPUT_DIR", file=sys.stderr)
        return 2
    evaluation = generate()
    evaluation.write(Path(argv[0]))
    domains = {row.email.rpartition("@")[2] for row in evaluation.rows}
    missing = sum(not row.deliverable for row in evaluation.rows)
    print(f"{len(evaluation.rows)} addresses, {len(domains)} domains, {missing} undeliverable")
    for cls, count in sorted(evaluation.counts().items()):
        print(f"  {cls:28} {count:5}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
