"""radtrack.compute: pure computation over frames and arrays (docs/architecture.md "Floors").

Summaries, attribution, energy and its error, checks and the studies' math; nothing here reads
a store or a file.
"""
