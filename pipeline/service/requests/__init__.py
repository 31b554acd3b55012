"""Requests: parameters decoded strictly, then read into what a route needs; failed
authentication slowed down per client."""
