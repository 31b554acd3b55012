"""What a run keeps between its passes and across a restart: the work folder, the spill,
the duplicate marker."""
