"""Address-level checks spread over a Dask cluster, with the local engine's choices and without
the driver holding an address.

- :mod:`.plan`: what the workers compute (candidates in key buckets, what the caches answer,
  one tally per domain, the targets of each owner, the answers nobody has to ask for);
- :mod:`.spread`: the driver's share-out from the tallies (the local engine's rules), and the
  owners it starts;
- :mod:`.owners`: the owners, one per group of mail providers (SMTP), per remote API, per paid
  verifier, which commit each answer as it arrives and, run again after a lost worker, go on
  from what was committed.
"""
