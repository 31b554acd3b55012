"""Stage 1, read: what a list is, its sources (CSV, Parquet, zip members, workbooks, packed
files), its email column, and the rows that are not records."""
