"""Test and bench worlds: made-up people, labelled evaluation worlds and a corpus of real mail
servers' replies, which the tests and the benches build their worlds from. Not shipped: nothing
a command runs needs them (the sandbox's own world is package data, ``pipeline/sandbox/data``).

people/       a population of contacts with the names, addresses and numbers people have
evaluation/   labelled worlds of the accuracy bench (typos, squats, providers)
replies/      SMTP replies as real servers word them, with their sources
"""
