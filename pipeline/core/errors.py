"""The one exception tree of listclean.

Expected failures of the outside world (a DNS timeout, SERVFAIL, a refused connection) are
*data*: they become reason codes on rows, never exceptions. We raise only for what a person must
fix before a run can succeed, and every message says what was wrong and what to do::

    ListcleanError                 exit_code 1   base; anything unexpected
    ├── UsageError                 exit_code 2   bad flag or config value
    │   └── ConfigError            exit_code 2   configs/*.toml unreadable or invalid
    ├── InputError                 exit_code 2   input file unreadable, no email column, ...
    ├── OutputError                exit_code 2   the output cannot be written where it was asked
    ├── ResolverUnhealthyError     exit_code 3   the resolver cannot resolve well-known mail domains
    ├── SmtpUnavailableError       exit_code 3   no mail server can be reached for SMTP checks
    ├── VendorUnavailableError     exit_code 3   a paid verifier does not answer before the run
    └── StoreError                 exit_code 1   the on-disk cache is broken or unwritable
        └── StoreUnreachableError  exit_code 2   the database named (--db) cannot be opened

The exit code lives on the class so the command line maps any error with one ``except``.
"""

from __future__ import annotations


class ListcleanError(Exception):
    """Base of every error listclean raises on purpose."""

    exit_code = 1


class UsageError(ListcleanError):
    """A flag or setting has a value listclean cannot work with."""

    exit_code = 2


class ConfigError(UsageError):
    """A configuration file is unreadable or holds an invalid value."""


class InputError(ListcleanError):
    """The input list cannot be read as a list of addresses."""

    exit_code = 2


class OutputError(ListcleanError):
    """The output (or a companion file) cannot be written where the user asked."""

    exit_code = 2


class ResolverUnhealthyError(ListcleanError):
    """The DNS resolver failed its canary check; its answers cannot be trusted."""

    exit_code = 3


class SmtpUnavailableError(ListcleanError):
    """Outbound SMTP does not work from here; probing would only produce timeouts."""

    exit_code = 3


class VendorUnavailableError(ListcleanError):
    """A paid verifier does not answer when its balance is asked, before anything is spent:
    asking it about every address would only produce api_error rows."""

    exit_code = 3


class StoreError(ListcleanError):
    """The on-disk cache cannot be opened, read or written."""


class StoreUnreachableError(StoreError):
    """The database a setting or --db names cannot be reached or opened: a wrong URL, a server
    that is down, a refused password. The person who named it must fix it, like a bad flag."""

    exit_code = 2
