"""What the launcher imports before it releases the scripts is on every launch's path
(issue 25: the script starts <= 0.3 s after plain python). Modules only some launches need
stay out of it until they are used: psutil (~15 ms; the listeners read /proc themselves and
import it where they fall back to it), ssl (~9 ms; https only) and importlib.metadata
(12-40 ms with email and zipfile; only when a listener name is looked up)."""

from __future__ import annotations

import json
import subprocess
import sys


def _loaded(code: str) -> dict[str, bool]:
    probe = (f"import sys\n{code}\nimport json\n"
             "print(json.dumps({m: m in sys.modules for m in ('psutil', 'ssl', 'importlib.metadata')}))")
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])


def test_a_launch_without_listeners_imports_none_of_them():
    loaded = _loaded("import radtrack.cli, radtrack.run.launch, radtrack.run.experiment, radtrack.sheet.rows, "
                     "radtrack.store.tracking, radtrack.store.credentials\n"
                     "from radtrack.listeners import registry\nregistry.parse_names('none')")
    assert loaded == {"psutil": False, "ssl": False, "importlib.metadata": False}


def test_the_listener_classes_need_no_psutil_to_be_looked_up():
    loaded = _loaded("import radtrack.cli, radtrack.run.launch\nfrom radtrack.listeners import registry\n"
                     "[registry.get(n) for n in ('smi', 'top', 'dcgm', 'iostat')]\n"
                     "[registry.get(n).shared_sampler({}) for n in ('smi', 'top', 'dcgm', 'iostat')]")
    assert loaded["psutil"] is False and loaded["ssl"] is False
