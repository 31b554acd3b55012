"""The run history on a Dask cluster (:mod:`pipeline.stages.history`'s step, the Dask way): the
workers write it, not the driver.

Each input part is decided where it is (:func:`.tasks.decide_remembering`), which keeps beside
its output rows the part's narrow table: one row per distinct address, its hash, VERDICT,
REASON, SCORE (and, for the changes file, the address and when its answer was learned). One
worker task opens the history, stages the run and loads the list's last run
(:func:`.tasks.open_run`); each part's worker compares its table with it
(:func:`.tasks.compare_part`). Then the rule for writing:

* ``[history] db`` a ``postgresql://`` URL: each part's worker adds its own part to the staged
  run, the moment it is compared (PostgreSQL takes writers from any machine);
* a SQLite file: one task a part adds it (:func:`.tasks.keep_part`), each after the one before,
  so the file has one writer at a time, in order, and a worker holds one part's table at a
  time. SQLite's locks are not to be trusted across machines, so the file must be on storage
  every worker reaches and only these tasks write it, one after another. Before anything is
  staged a marker the driver leaves beside the file must be found by the worker
  (:func:`.tasks.reach_marker`): a history on storage the workers do not reach (a driver's
  local cache) stops the run with a message, never a history scattered over the workers'
  disks.

The changes file is written by one worker (:func:`.tasks.write_changes`) under the name the
driver gives it, and published at the run's commit point with the other files; the driver
gathers only each part's counts. Once the files are published one more task keeps the run
(:func:`.tasks.finish_run`); a run that fails has its staged run removed
(:func:`.tasks.discard_run`).
"""
