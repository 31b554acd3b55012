"""Domains: DNS, mail exchanges, the domain cache, typo suggestions, and their frame step."""
