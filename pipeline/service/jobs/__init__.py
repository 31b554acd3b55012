"""Bulk jobs: whole lists over HTTP, cleaned by the same pipeline as ``clean``.

http/       the API (/api/jobs...) and the upload page at /: requests, answers, links
runner.py   an instance's scheduler: claims queued jobs, runs each in a process of its own
worker.py   a job's process: clean of one list, reporting to its instance
tasks.py    short work in the jobs' processes: a list read as clean would, formats made
store.py    the jobs' records beside the keys and quota counters (sql.py: their statements)
storage.py  the jobs' files: a folder, or an s3:// prefix every instance reaches
types.py    the value types: a job, its state, options and units
"""
