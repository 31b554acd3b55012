"""Hostile inputs and path mistakes for `listclean clean`, run through the real command."""
