"""Loopback fakes of the five paid verifiers, built from their documented shapes.

Each fake is a real aiohttp server on 127.0.0.1 (no mock of our own code): it takes the key
where its vendor takes it, keeps a credit ledger by its vendor's billing rule, answers magic
addresses (the vendors' own sandbox addresses where they publish them, local-part triggers in
Kickbox's style where they do not), reports failures the way its vendor does (inside HTTP 200
for ZeroBounce and NeverBounce, 402 or an ambiguous 403 for the others), and runs bulk jobs
that finish after a few status polls. Tests read its ledger: credits spent, calls, jobs made,
requests in flight at the peak.

base.py         the server, the keys and their balances, the ledger, the call log
zerobounce.py, neverbounce.py, kickbox.py, emailable.py, bouncer.py   one fake each
"""
