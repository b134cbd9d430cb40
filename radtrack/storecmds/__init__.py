"""The store's commands: ``radtrack sync`` (storing what a launcher left in its spools,
sync.py with syncruns.py), ``radtrack copy`` (copyruns.py) and ``radtrack sync
--repair-store`` (storerepair.py). They stand beside the launcher, above the store, the
sheet and the end of a workload (docs/architecture.md "Floors"); the store's package holds
no command."""
