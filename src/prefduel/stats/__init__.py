"""Statistics: summary tables, paired gains and learning curves, read from result rows."""
