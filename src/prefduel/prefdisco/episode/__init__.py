"""One episode: its prompts, the passive user and router, the ask strategy, judging, metrics."""
