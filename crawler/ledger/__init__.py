"""The books of a run: the SQLite ledger, the previous run, and the run's state."""
