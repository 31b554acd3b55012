"""Address-level answers bought from a paid verifier: ZeroBounce, NeverBounce, Kickbox,
Emailable and Bouncer, for teams whose hosts cannot reach port 25.

A vendor is asked last: syntax, DNS, the bounce ledger and the paid-answer cache settle what
they can for free, and each normalized address is paid for at most once within the cache's TTL.
Sending addresses to a vendor hands them to a third party (a data processor, under the team's
own agreement with it).

types.py        what comes back: an answer, a failure, a job, a vendor's limits
verdicts.py     the mapping tables, one per vendor, from its words to our reason codes
http.py         talking to a vendor: its hosts (or --api-url), the key, retries, pace, redaction
zerobounce.py, neverbounce.py, kickbox.py, emailable.py, bouncer.py
                one adapter each: balance, one address, a bulk job (submit, status, results)
store.py        the paid-answer cache and the bulk jobs' ledger (SQLite or PostgreSQL)
verifier.py     a run's requests: per address or in bulk, within the balance and the budget,
                resuming the jobs a killed run left
checker.py      the AddressChecker of a vendor method, and routing by mail provider
"""
