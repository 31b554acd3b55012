"""Calibrated SCORE: the list's own sends and hard bounces (the bounce ledger) joined with what
each address was scored before the send (the run history), and a monotone mapping from SCORE to
the observed deliverability that the list's later runs, and the service, apply.

types.py    the value types: a calibration level, a calibration, a group of the report
fit.py      the fit: levels of SCORE, isotonic regression (PAV) within each VERDICT's band,
            the groups of the report (bins, REASON, provider) and the calibration error
apply.py    the one rule both fronts apply: SCORE mapped level by level, kept in its band
sends.py    the ledger's sends matched to the run of the list that started last before each
store.py    the calibrations, one per list, in the run history's database
"""
