"""The run history: every run of a list, what it decided about each of its addresses, and what
changed since the list's last run.

keys.py     the hash an address is kept by (stable across versions and machines)
names.py    a list's name across runs (its file name without dates), the settings' digest
types.py    the value types: a run, what it keeps of an address, the changes since the last
compare.py  a run's decided rows against the last run: counts and the changes file's rows
store.py    the store (SQLite file or PostgreSQL): runs, their parts, retention, erasure
"""
