"""Serve a world file on 127.0.0.1 in its own process until standard input closes.

Prints the server address on the first line of standard output. The benchmark runs the DNS
server here so that it does not share a CPU core's interpreter lock with the run it measures.
"""

from __future__ import annotations

import sys

from pipeline.sandbox.dns_server import SandboxDNS, load_world


def main() -> None:
    with SandboxDNS(load_world(sys.argv[1])) as server:
        print(server.address, flush=True)
        sys.stdin.read()


if __name__ == "__main__":
    main()
