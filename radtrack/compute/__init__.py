"""radtrack.compute: pure computation over frames and arrays, floor 1 (docs/architecture.md "Floors").

Summaries, energy sums, attribution, energy and its error, carbon, checks and the studies'
math; nothing here reads a store or a file. Imports only radtrack.vocab and radtrack.errors.
"""
