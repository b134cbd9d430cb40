"""radtrack.vocab: the vocabulary every room reads (docs/architecture.md "Floors").

The stored names and tags (schema.py), what each series is: its scope, unit, role and label
(meaning.py, meaning_words.py), and which series measure a device's energy (energy_sources.py).
"""
