"""Databases: one owner per kind (SQLite files, PostgreSQL) and what chooses between them."""
