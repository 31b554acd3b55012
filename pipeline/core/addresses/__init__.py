"""Addresses: the RFC syntax, the vectorized normalizer, repairs, and their frame step."""
