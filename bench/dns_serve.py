"""Serve a world file on 127.0.0.1 in its own process until standard input closes.

Prints the server address on the first line of standard output. The benchmark runs the DNS
server here so that it does not share a CPU core's interpreter lock with the run it measures.

Each line ``count`` read on standard input prints, as one JSON line, the queries received since
the start or the last ``count`` and how many distinct questions (name and type) they asked, then
starts counting again: a question asked twice is a retry or a domain resolved twice.
"""

from __future__ import annotations

import json
import sys

from pipeline.sandbox.dns_server import SandboxDNS, load_world


def main() -> None:
    with SandboxDNS(load_world(sys.argv[1]), query_log_limit=10_000_000) as server:
        print(server.address, flush=True)
        for line in sys.stdin:
            if line.strip() == "count":
                queries, questions = server.query_count, len(set(server.queries()))
                server.reset_counts()
                print(json.dumps({"queries": queries, "questions": questions}), flush=True)


if __name__ == "__main__":
    main()
