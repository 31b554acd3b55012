"""Calibrated SCORE: the list's own sends and hard bounces (the bounce ledger) joined with what
each address was scored before the send (the run history), and a monotone mapping from SCORE to
the observed deliverability that the list's later runs, and the service, apply.

types.py    the value types: a calibration cell, a calibration, a group of the report
fit.py      the fit: cells of SCORE (a level, its REASONs, their providers), the findings,
            the groups of the report (bins, REASON, provider) and the calibration error
order.py    the monotone fit of a band's cells (isotonic regression on levels in layers)
apply.py    the one rule both fronts apply: SCORE mapped by the finest cell, kept in its band
sends.py    the ledger's sends matched to the run of the list that started last before each
store.py    the calibrations, one per list, in the run history's database
"""
