"""Stage 5, write: the output's files and sinks, their formats, and the one commit point."""
