"""Run a function once a module has been imported, whoever imports it, without importing it.

A meta path finder at the head of ``sys.meta_path`` wraps the named module's loader: the
callback gets the module right after its code ran. The MLflow hook (radtrack/script/
run_events.py) patches MLflow's tracking client this way, and RADTBenchmark attaches its
row run once the script imports MLflow (radtrack/script/benchmark.py). Both live in the
script's process before its release, so nothing here imports more than ``sys`` and
``importlib.machinery``.
"""

from __future__ import annotations

import importlib.machinery
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any


class AfterImport:
    """Calls ``callback(module)`` once the named module has been imported, whoever imports it.
    A meta path finder by protocol (find_spec), not by importlib.abc's base class: its import
    (importlib.resources with it, 6 ms on the 2-core VM) would come before the script's release."""

    def __init__(self, callbacks: dict[str, Callable[[ModuleType], None]]):
        self.callbacks = callbacks

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in self.callbacks:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _Loader(spec.loader, self.callbacks.pop(fullname))
        if not self.callbacks and self in sys.meta_path:
            sys.meta_path.remove(self)
        return spec


class _Loader:
    def __init__(self, inner: Any, callback: Callable[[ModuleType], None]):
        self.inner, self.callback = inner, callback

    def create_module(self, spec: Any) -> Any:
        return self.inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.inner.exec_module(module)
        try:
            self.callback(module)
        except Exception:  # noqa: BLE001 - an MLflow whose internals moved: no binding
            pass

    def __getattr__(self, name: str) -> Any:  # get_source, get_code, ... as the real loader
        return getattr(self.inner, name)


def when_imported(name: str, callback: Callable[[ModuleType], None]) -> bool:
    """Call ``callback(module)`` once module ``name`` has been imported, by whoever imports it
    (RADTBenchmark attaches the row run when the script imports MLflow, instead of importing
    it itself: radtrack/script/benchmark.py). False when it is imported already: nothing is
    registered, the caller acts now."""
    if name in sys.modules:
        return False
    sys.meta_path.insert(0, AfterImport({name: callback}))
    return True
