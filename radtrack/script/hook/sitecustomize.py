"""Every Python process the script starts records its MLflow runs (docs/mlflow-code.md).

The launcher puts this folder first on ``PYTHONPATH`` in the script's environment
(radtrack/run/start.py), so every Python interpreter descending from the script (a
``subprocess.run([sys.executable, ...])`` child, ``multiprocessing`` spawn and forkserver
workers, ``torchrun``'s agent and ranks, ``accelerate launch``, joblib/loky and Ray local
workers) runs this module at start-up, as Python runs any ``sitecustomize``. It:

- waits for the process to import MLflow (a finder on ``sys.meta_path`` that answers no
  import itself): a process that never imports MLflow pays one environment look-up and no
  import; one that does gets radtrack/script/run_events.py's hook, appending its runs to
  the row's ``$RADTRACK_RUN_EVENTS`` like the script's own;
- keeps a stop radtrack asked for (``--max-time``, Ctrl-C to the launcher) free of a
  ``KeyboardInterrupt`` traceback in every process of the tree (script/handshake.py's stop
  file tells radtrack's stop from the user's Ctrl-C);
- then runs the ``sitecustomize`` this one hides (a distribution's or a virtual
  environment's), if there is one, so nothing the user had is lost.
"""

import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))


def _import_run_events():  # -> module | None
    try:
        from radtrack.script import run_events
    except ImportError:  # another interpreter than radtrack's: load radtrack from its folder
        root = os.path.dirname(os.path.dirname(os.path.dirname(_HERE)))
        sys.path.append(root)
        try:
            from radtrack.script import run_events
        except ImportError:
            return None
        finally:
            sys.path.remove(root)
    return run_events


class _WhenMlflow:
    """Installs run_events' hook as the process first imports ``mlflow``; finds nothing."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "mlflow":
            return None
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        try:
            run_events = _import_run_events()
            if run_events is not None:
                run_events.install()
        except Exception:  # noqa: BLE001 - never into the process
            pass
        return None


def _quiet_stop_hook(previous):
    def hook(kind, value, tb):
        # SIGINT is a KeyboardInterrupt; torchrun's agent turns it into its SignalException
        if issubclass(kind, KeyboardInterrupt) or kind.__name__ == "SignalException":
            try:
                run_events = _import_run_events()
                if run_events is not None and run_events.stop_requested() is not None:
                    return  # radtrack stopped the row: no traceback (the exit code stays -2)
            except Exception:  # noqa: BLE001 - as Python would
                pass
        previous(kind, value, tb)

    return hook


def _chain() -> None:
    """Run the next ``sitecustomize`` on the path, the one this module hides."""
    import importlib.machinery

    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None:
        return
    import importlib.util

    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


if os.environ.get("RADTRACK_RUN_EVENTS"):
    if "mlflow" not in sys.modules:
        sys.meta_path.insert(0, _WhenMlflow())
    sys.excepthook = _quiet_stop_hook(sys.excepthook)
_chain()
