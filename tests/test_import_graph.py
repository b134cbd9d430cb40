"""The package's imports run one way (docs/architecture.md "Data flow"): no circles, no back-edges.

Every module of the radtrack package tree (radtrack/, radt/; import names are paths) is parsed with ``ast``; every import counts, those
inside functions and under ``TYPE_CHECKING`` too. The check fails on:

- an import from the writing side (radtrack.run, radtrack.store, radtrack.postrun,
  radtrack.script, radtrack.listeners, radt) into a reader: radtrack.frontend,
  radtrack.export, or a radtrack.analysis module that is not pure computation;
- an import from radtrack.analysis or radtrack.export into radtrack.frontend;
- a pure computation module (``PURE_ANALYSIS``) that imports a reader, MLflow, or any
  radtrack module other than pure computation and ``SHARED``;
- any import cycle among modules.

Everyone may import ``SHARED`` and the pure computation modules. ``ALLOWED`` names the one
sanctioned back-edge, with its reason; a test keeps it from going stale.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: package name -> its folder
PACKAGES = {"radtrack": ROOT / "radtrack", "radt": ROOT / "radt"}
WRITERS = ("radtrack.run", "radtrack.store", "radtrack.postrun", "radtrack.script",
           "radtrack.listeners", "radt")
#: imported by every side: the names, and what each stored series is (vocab/meaning.py, its
#: listener's declaration) and which of them measure a device's energy (vocab/energy_sources.py),
#: which readers and the end-of-run step select series by (issue 40)
SHARED = frozenset({"radtrack.vocab.schema", "radtrack.errors", "radtrack.spec", "radtrack.compute.stats",
                    "radtrack.vocab.meaning", "radtrack.vocab.energy_sources",
                    "radtrack.vocab.device_identity"})
#: radtrack.analysis modules that compute over frames and read nothing: the end-of-run step may use them
PURE_ANALYSIS = frozenset(
    "radtrack.compute." + p.stem for p in (ROOT / "radtrack" / "compute").glob("*.py")
    if p.stem not in ("__init__", "stats"))
#: (importer, imported) -> why this back-edge is sanctioned
ALLOWED = {
    ("radtrack.run.experiment", "radtrack.analysis.workload_runs"):
        "a co-located workload's STP/ANTT/energy vs serial need its solo baselines (earlier "
        "workloads) and the script-logged throughput, both only in the store: the experiment "
        "loop reads them through this one reader and hands them to radtrack.postrun",
}

#: the data path, launch -> listeners -> store -> postrun -> readers -> page, as imports:
#: (importer, imported) package pairs that must never appear (issue 40; SHARED aside)
NEVER = (
    ("radtrack.store", "radtrack.postrun"), ("radtrack.store", "radtrack.sheet"),
    ("radtrack.store", "radtrack.analysis"), ("radtrack.store", "radtrack.run"),
    ("radtrack.postrun", "radtrack.run"), ("radtrack.postrun", "radtrack.sheet"),
    ("radtrack.sheet", "radtrack.postrun"), ("radtrack.analysis", "radtrack.postrun"),
    ("radtrack.analysis", "radtrack.run"), ("radtrack.analysis", "radtrack.sheet"),
    ("radtrack.listeners", "radtrack.run"), ("radtrack.listeners", "radtrack.postrun"),
    ("radtrack.listeners", "radtrack.analysis"),
)
#: (importer, imported) module edges against NEVER that remain, with why; each is to go
NEVER_YET = {
    ("radtrack.store.sync", "radtrack.sheet"): "sync writes a synced row's status back to its sheet",
    ("radtrack.store.sync", "radtrack.sheet.lock"): "as above, under the sheet's lock",
    ("radtrack.store.traces", "radtrack.compute.energy_figures"):
        "the sink's end stores the energy error bars (pure computation)",
    ("radtrack.sheet.rows", "radtrack.postrun.footprint"): "the sheet's carbon cells are checked "
                                                          "by footprint's rules",
    ("radtrack.analysis.report", "radtrack.postrun.footprint"): "the figures a run recorded (tags)",
    ("radtrack.analysis.summary_energy", "radtrack.postrun.footprint"): "as above",
}

Graph = Mapping[str, Iterable[str]]


def never_edges(graph: Graph, known: Mapping[tuple[str, str], str] = NEVER_YET) -> list[str]:
    """The imports between packages that the data path forbids (:data:`NEVER`)."""
    bad = []
    for src, targets in sorted(graph.items()):
        for dst in sorted(targets):
            if dst in SHARED or (src, dst) in known:
                continue
            for a, b in NEVER:
                if _under(src, a) and _under(dst, b):
                    bad.append(f"{src} -> {dst}: {a} never imports {b}")
    return bad


def _under(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def package_modules() -> dict[str, Path]:
    """Dotted module name -> source file, for every module of the package tree."""
    found: dict[str, Path] = {}
    for package, folder in PACKAGES.items():
        for path in sorted(folder.rglob("*.py")):
            parts = path.relative_to(folder).with_suffix("").parts
            if "__pycache__" in parts:
                continue
            name = ".".join((package, *parts))
            found.setdefault(name.removesuffix(".__init__"), path)
    return found


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".")
    base = base[:len(base) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(module: str, path: Path, known: Iterable[str]) -> set[str]:
    """Every module named by an import anywhere in ``path`` (radtrack's and others')."""
    known = set(known)
    tree = ast.parse(path.read_text(), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, module, path.name == "__init__.py")
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if sub in known else base)
    return {name for name in out if name}


def import_graph() -> dict[str, set[str]]:
    """Module -> the package-tree modules it imports (the nearest known module of a dotted name)."""
    modules = package_modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets = set()
        for imported in imports_of(name, path, modules):
            while imported and imported not in modules:
                imported = imported.rpartition(".")[0]
            if imported and imported != name:
                targets.add(imported)
        graph[name] = targets
    return graph


def external_imports(module: str) -> set[str]:
    """Top-level names of the third-party and standard modules ``module`` imports."""
    modules = package_modules()
    return {name.split(".")[0] for name in imports_of(module, modules[module], modules)
            if name.split(".")[0] not in ("radtrack", "radt")}


def is_reader(module: str) -> bool:
    return (_under(module, "radtrack.frontend") or _under(module, "radtrack.export")
            or (_under(module, "radtrack.analysis") and module not in PURE_ANALYSIS))


def back_edges(graph: Graph, allowed: Mapping[tuple[str, str], str] = ALLOWED) -> list[str]:
    """The imports that run against the data path, one line each."""
    bad = []
    for src, targets in sorted(graph.items()):
        for dst in sorted(targets):
            if (src, dst) in allowed or dst in SHARED:
                continue
            if any(_under(src, w) for w in WRITERS) and is_reader(dst):
                bad.append(f"{src} -> {dst}: the writing side imports a reader")
            elif ((_under(src, "radtrack.analysis") or _under(src, "radtrack.export"))
                  and _under(dst, "radtrack.frontend")):
                bad.append(f"{src} -> {dst}: analysis imports the frontend")
            elif src in PURE_ANALYSIS and dst not in PURE_ANALYSIS:
                bad.append(f"{src} -> {dst}: pure computation imports beyond pure computation")
    return bad


def cycles(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        # iterative Tarjan: (node, iterator over its targets)
        work = [(node, iter(sorted(graph.get(node, ()))))]
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        while work:
            current, targets = work[-1]
            for nxt in targets:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[current] = min(low[current], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[current])
                if low[current] == index[current]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == current:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_graph_reads_every_package() -> None:
    graph = import_graph()
    for package in PACKAGES:
        assert package in graph
    assert "radtrack.compute.attribution" in graph["radtrack.postrun.accounting"]
    # function-local imports count
    assert "radtrack.analysis.workload_runs" in graph["radtrack.run.experiment"]
    assert "radtrack.postrun.accounting" in graph["radtrack.postrun.workload_end"]


def test_no_import_runs_against_the_data_path() -> None:
    assert back_edges(import_graph()) == []


def test_the_data_path_runs_one_way() -> None:
    assert never_edges(import_graph()) == []


def test_every_remaining_exception_still_exists() -> None:
    graph = import_graph()
    for src, dst in NEVER_YET:
        assert dst in graph.get(src, set()), f"{src} -> {dst} is gone: drop it from NEVER_YET"


def test_the_direction_check_fails_on_each_back_edge() -> None:
    graph = {"radtrack.store.sync": {"radtrack.postrun.synced"},
             "radtrack.postrun.synced": {"radtrack.run.experiment", "radtrack.vocab.schema"},
             "radtrack.analysis.summary_energy": {"radtrack.postrun.footprint"}}
    assert never_edges(graph, known={}) == [
        "radtrack.analysis.summary_energy -> radtrack.postrun.footprint: radtrack.analysis never "
        "imports radtrack.postrun",
        "radtrack.postrun.synced -> radtrack.run.experiment: radtrack.postrun never imports radtrack.run",
        "radtrack.store.sync -> radtrack.postrun.synced: radtrack.store never imports radtrack.postrun",
    ]


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_pure_computation_reads_no_store() -> None:
    graph = import_graph()
    for module in sorted(PURE_ANALYSIS):
        assert module in graph, f"{module} is named pure but does not exist"
        assert "mlflow" not in external_imports(module), f"{module} imports mlflow"


def test_every_sanctioned_back_edge_still_exists() -> None:
    graph = import_graph()
    for src, dst in ALLOWED:
        assert dst in graph.get(src, set()), f"{src} -> {dst} is gone: drop it from ALLOWED"


def test_the_check_fails_on_a_back_edge_and_a_cycle() -> None:
    graph = {
        "radtrack.postrun.accounting": {"radtrack.analysis.data", "radtrack.compute.attribution",
                                        "radtrack.vocab.schema"},
        "radtrack.analysis.data": {"radtrack.frontend.figures"},
        "radtrack.compute.attribution": {"radtrack.analysis.data"},
        "radtrack.frontend.figures": {"radtrack.frontend.data"},
        "radtrack.frontend.data": {"radtrack.frontend.figures"},
    }
    assert back_edges(graph, allowed={}) == [
        "radtrack.analysis.data -> radtrack.frontend.figures: analysis imports the frontend",
        "radtrack.compute.attribution -> radtrack.analysis.data: pure computation imports "
        "beyond pure computation",
        "radtrack.postrun.accounting -> radtrack.analysis.data: the writing side imports a reader",
    ]
    assert cycles(graph) == [["radtrack.frontend.data", "radtrack.frontend.figures"]]
    graph["radtrack.frontend.data"] = {"radtrack.analysis.data"}
    graph["radtrack.analysis.data"] = {"radtrack.postrun.accounting"}
    assert cycles(graph) == [["radtrack.analysis.data", "radtrack.compute.attribution",
                              "radtrack.postrun.accounting"]]


@pytest.mark.parametrize("source, module, expected", [
    ("from . import data\n", "radtrack.frontend.app", "radtrack.frontend.data"),
    ("from .data import X\n", "radtrack.frontend.app", "radtrack.frontend.data"),
    ("def f():\n    from radtrack import gpus\n", "radtrack.cli", "radtrack.gpus"),
])
def test_imports_are_resolved(tmp_path: Path, source: str, module: str, expected: str) -> None:
    path = tmp_path / "mod.py"
    path.write_text(source)
    assert expected in imports_of(module, path, {expected})
