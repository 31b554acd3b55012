"""Serve a world file on 127.0.0.1 in its own process until standard input closes.

Prints the server address on the first line of standard output. The benchmark runs the DNS
server here so that it does not share a CPU core's interpreter lock with the run it measures.

Each line ``count [FILE]`` read on standard input prints, as one JSON line, the queries received
since the start or the last ``count`` and how many distinct questions (name and type) they
asked, writes each question, how often its packet came and under how many query ids to FILE
when given, then starts counting again. A resolver that sends a query again while it waits for
the answer (c-ares does) sends it under the same id: a question asked twice has two ids.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from pipeline.sandbox.dns_server import SandboxDNS, load_world


def main() -> None:
    with SandboxDNS(load_world(sys.argv[1]), query_log_limit=10_000_000) as server:
        print(server.address, flush=True)
        for line in sys.stdin:
            command, _, path = line.strip().partition(" ")
            if command == "count":
                received = server.queries_with_ids()
                asked = Counter((name, qtype) for name, qtype, _ in received)
                ids = Counter((name, qtype) for name, qtype, _ in set(received))
                queries = server.query_count
                server.reset_counts()
                if path:  # the distinct questions too, one "NAME TYPE TIMES IDS" a line
                    counted = sorted(asked.items())
                    lines = (f"{n} {t} {times} {ids[n, t]}\n" for (n, t), times in counted)
                    Path(path).write_text("".join(lines))
                print(json.dumps({"queries": queries, "questions": len(asked)}), flush=True)


if __name__ == "__main__":
    main()
