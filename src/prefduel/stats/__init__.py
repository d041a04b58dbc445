"""Statistics: reference rows, summary tables."""
