"""The report of a run: its rows checked on read, the tables, the sentences, figures and pages."""
