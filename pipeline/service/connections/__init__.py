"""Connections: serving the app, who may hold an unfinished request and for how long, and the
access log."""
