"""Domains: DNS, mail exchanges, the domain cache, typo suggestions, their frame step, and the
answers a domain gives its plain addresses (shapes)."""
