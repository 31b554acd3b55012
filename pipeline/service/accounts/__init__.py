"""Accounts: API keys and quota counters (SQLite or PostgreSQL), the quota policies and their
rate-limit headers."""
