"""radtrack.vocab: the vocabulary every room reads, floor 0 (docs/architecture.md "Floors").

The stored names and tags (schema.py), the words a listener declares its series in
(series.py) and where a listener's declaration is read (declared.py, through the plugin
interface), what each series is: its scope, unit, role and label (meaning.py,
meaning_words.py), which series measure a device's energy (energy_sources.py) and a
device's identity (device_identity.py). Imports nothing of radtrack but radtrack.errors.
"""
