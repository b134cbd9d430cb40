"""The package's imports run one way, floor by floor (docs/architecture.md "Floors"): no
circles between modules or packages, no back-edges, no exceptions.

Every module of the package tree (radtrack/, radt/; import names are paths) is parsed with
``ast``; every import counts, those inside functions and under ``TYPE_CHECKING`` too. The
floors, lowest first:

- the vocabulary (radtrack.vocab: names, scopes, units, roles, device identity) imports
  nothing of radtrack but radtrack.errors;
- pure computation (radtrack.compute) imports only the vocabulary, itself and radtrack.errors
  (and never MLflow);
- the writers (``WRITERS``: store, listeners, script, run, postrun, sheet, placement,
  executors, nodes, the store's commands, radt) never import a reader (``READERS``:
  radtrack.analysis, radtrack.export, radtrack.frontend; ``ALLOWED`` is empty), and the
  data path's package pairs in ``NEVER`` never appear;
- readers never import the frontend but from it; the command line (radtrack.cli*) is the top.

No cycle among modules, nor among packages: a package is a folder of radtrack (its modules
together), each root module (radtrack.errors, radtrack.spec, radtrack.atomic,
radtrack.liveness: floor utilities; radtrack.cli*: the top) is its own.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: package name -> its folder
PACKAGES = {"radtrack": ROOT / "radtrack", "radt": ROOT / "radt"}
VOCAB, COMPUTE = "radtrack.vocab", "radtrack.compute"
#: floor -> the only packages (or modules) of the tree it may import besides itself
FLOORS = {VOCAB: ("radtrack.errors",), COMPUTE: (VOCAB, "radtrack.errors")}
#: root modules that import nothing of radtrack: every floor above the vocabulary's reads them
FLOOR_UTILITIES = ("radtrack.errors", "radtrack.spec", "radtrack.atomic", "radtrack.liveness")
WRITERS = ("radtrack.store", "radtrack.listeners", "radtrack.script", "radtrack.run",
           "radtrack.postrun", "radtrack.sheet", "radtrack.placement", "radtrack.executors",
           "radtrack.nodes", "radtrack.storecmds", "radt")
READERS = ("radtrack.analysis", "radtrack.export", "radtrack.frontend")
#: (importer, imported) -> why this back-edge is sanctioned
ALLOWED: dict[tuple[str, str], str] = {}  # none left: the launch is handed the one reader
# it needs (radtrack/stored_reader.py) by the entry at the top

#: the data path, launch -> listeners -> store -> postrun -> readers -> page, as imports:
#: (importer, imported) package pairs that must never appear (issue 40, issue 48)
NEVER = (
    ("radtrack.store", "radtrack.postrun"), ("radtrack.store", "radtrack.sheet"),
    ("radtrack.store", "radtrack.analysis"), ("radtrack.store", "radtrack.run"),
    ("radtrack.store", "radtrack.storecmds"), ("radtrack.script", "radtrack.store"),
    ("radtrack.postrun", "radtrack.run"), ("radtrack.postrun", "radtrack.sheet"),
    ("radtrack.sheet", "radtrack.postrun"), ("radtrack.analysis", "radtrack.postrun"),
    ("radtrack.analysis", "radtrack.run"), ("radtrack.analysis", "radtrack.sheet"),
    ("radtrack.listeners", "radtrack.run"), ("radtrack.listeners", "radtrack.postrun"),
    ("radtrack.listeners", "radtrack.analysis"), ("radtrack.listeners", "radtrack.store"),
)
#: (importer, imported) module edges against NEVER that remain, with why; each is to go
NEVER_YET: dict[tuple[str, str], str] = {}

Graph = Mapping[str, Iterable[str]]


def never_edges(graph: Graph, known: Mapping[tuple[str, str], str] = NEVER_YET) -> list[str]:
    """The imports between packages that the data path forbids (:data:`NEVER`)."""
    bad = []
    for src, targets in sorted(graph.items()):
        for dst in sorted(targets):
            if (src, dst) in known:
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
    return any(_under(module, r) for r in READERS)


def back_edges(graph: Graph, allowed: Mapping[tuple[str, str], str] = ALLOWED) -> list[str]:
    """The imports that run against the data path, one line each."""
    bad = []
    for src, targets in sorted(graph.items()):
        for dst in sorted(targets):
            if (src, dst) in allowed:
                continue
            if any(_under(src, w) for w in WRITERS) and is_reader(dst):
                bad.append(f"{src} -> {dst}: the writing side imports a reader")
            elif is_reader(src) and not _under(src, "radtrack.frontend") and _under(dst, "radtrack.frontend"):
                bad.append(f"{src} -> {dst}: analysis imports the frontend")
    return bad


def floor_breaches(graph: Graph) -> list[str]:
    """The imports of a floor (:data:`FLOORS`) reaching anything of the tree above what it may
    import, one line each."""
    bad = []
    for src, targets in sorted(graph.items()):
        floor = next((f for f in FLOORS if _under(src, f)), None)
        if floor is None:
            continue
        may = (floor, *FLOORS[floor])
        for dst in sorted(targets):
            if not any(_under(dst, m) for m in may):
                bad.append(f"{src} -> {dst}: {floor} imports only {', '.join(may)}")
    return bad


def package_of(module: str) -> str:
    """The package a module counts in: radt; radtrack's folder (``radtrack.store``); a root
    module itself (``radtrack.errors``, ``radtrack.cli``); ``radtrack`` for the package root."""
    parts = module.split(".")
    return parts[0] if parts[0] == "radt" else ".".join(parts[:2])


def package_graph(graph: Graph) -> dict[str, set[str]]:
    """Package -> the packages its modules import (:func:`package_of`)."""
    out: dict[str, set[str]] = {}
    for src, targets in graph.items():
        a = package_of(src)
        out.setdefault(a, set()).update(b for dst in targets if (b := package_of(dst)) != a)
    return out


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
    assert "radtrack.analysis.workload_runs" in graph["radtrack.stored_reader"]
    assert "radtrack.postrun.accounting" in graph["radtrack.postrun.workload_end"]


def test_no_writer_imports_a_reader() -> None:
    assert back_edges(import_graph()) == []


def test_the_vocabulary_imports_nothing_of_radtrack_but_its_errors() -> None:
    graph = import_graph()
    vocab = [m for m in graph if _under(m, VOCAB)]
    assert {"radtrack.vocab.schema", "radtrack.vocab.meaning", "radtrack.vocab.series"} <= set(vocab)
    assert [b for b in floor_breaches(graph) if b.startswith(VOCAB + ".")] == []


def test_computation_imports_only_the_vocabulary() -> None:
    graph = import_graph()
    assert [b for b in floor_breaches(graph) if b.startswith(COMPUTE + ".")] == []


def test_the_floors_read_no_store() -> None:
    graph = import_graph()
    for module in sorted(m for m in graph if any(_under(m, f) for f in FLOORS)):
        assert "mlflow" not in external_imports(module), f"{module} imports mlflow"


def test_the_floor_utilities_import_nothing_of_radtrack() -> None:
    graph = import_graph()
    assert {m: sorted(graph[m]) for m in FLOOR_UTILITIES if graph[m]} == {}


def test_the_data_path_runs_one_way() -> None:
    assert never_edges(import_graph()) == []


def test_every_remaining_exception_still_exists() -> None:
    graph = import_graph()
    for src, dst in NEVER_YET:
        assert dst in graph.get(src, set()), f"{src} -> {dst} is gone: drop it from NEVER_YET"


def test_no_import_cycles() -> None:
    assert cycles(import_graph()) == []


def test_no_package_cycles() -> None:
    """No two packages reach each other, through any of their modules (a module cycle's
    absence does not say it: store.sync -> sheet.lock with sheet.rows -> store.tracking)."""
    assert cycles(package_graph(import_graph())) == []


def test_no_sanctioned_back_edge_is_left() -> None:
    """Issue 48: the floors hold with no exception; a new one needs this test changed."""
    assert ALLOWED == {}


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


def test_the_checks_fail_on_a_back_edge_a_floor_breach_and_a_cycle() -> None:
    graph = {
        "radtrack.postrun.accounting": {"radtrack.analysis.data", "radtrack.compute.attribution",
                                        "radtrack.vocab.schema"},
        "radtrack.analysis.data": {"radtrack.frontend.figures"},
        "radtrack.compute.attribution": {"radtrack.analysis.data", "radtrack.vocab.schema"},
        "radtrack.vocab.meaning": {"radtrack.listeners.registry", "radtrack.errors", "radtrack.vocab.schema"},
        "radtrack.frontend.figures": {"radtrack.frontend.data"},
        "radtrack.frontend.data": {"radtrack.frontend.figures"},
    }
    assert back_edges(graph, allowed={}) == [
        "radtrack.analysis.data -> radtrack.frontend.figures: analysis imports the frontend",
        "radtrack.postrun.accounting -> radtrack.analysis.data: the writing side imports a reader",
    ]
    assert floor_breaches(graph) == [
        "radtrack.compute.attribution -> radtrack.analysis.data: radtrack.compute imports only "
        "radtrack.compute, radtrack.vocab, radtrack.errors",
        "radtrack.vocab.meaning -> radtrack.listeners.registry: radtrack.vocab imports only "
        "radtrack.vocab, radtrack.errors",
    ]
    assert cycles(graph) == [["radtrack.frontend.data", "radtrack.frontend.figures"]]
    graph["radtrack.frontend.data"] = {"radtrack.analysis.data"}
    graph["radtrack.analysis.data"] = {"radtrack.postrun.accounting"}
    assert cycles(graph) == [["radtrack.analysis.data", "radtrack.compute.attribution",
                              "radtrack.postrun.accounting"]]


def test_the_package_check_fails_on_a_cycle_no_module_closes() -> None:
    graph = {"radtrack.store.sync": {"radtrack.sheet.lock"}, "radtrack.sheet.lock": set(),
             "radtrack.sheet.rows": {"radtrack.store.tracking", "radtrack.errors"},
             "radtrack.store.tracking": {"radtrack.errors"}, "radtrack.errors": set(),
             "radtrack.cli": {"radtrack.store.sync"}, "radt.run": {"radtrack.cli"}}
    assert cycles(graph) == []
    assert package_graph(graph) == {
        "radtrack.store": {"radtrack.sheet", "radtrack.errors"},
        "radtrack.sheet": {"radtrack.store", "radtrack.errors"}, "radtrack.errors": set(),
        "radtrack.cli": {"radtrack.store"}, "radt": {"radtrack.cli"}}
    assert cycles(package_graph(graph)) == [["radtrack.sheet", "radtrack.store"]]


@pytest.mark.parametrize("source, module, expected", [
    ("from . import data\n", "radtrack.frontend.app", "radtrack.frontend.data"),
    ("from .data import X\n", "radtrack.frontend.app", "radtrack.frontend.data"),
    ("def f():\n    from radtrack import gpus\n", "radtrack.cli", "radtrack.gpus"),
])
def test_imports_are_resolved(tmp_path: Path, source: str, module: str, expected: str) -> None:
    path = tmp_path / "mod.py"
    path.write_text(source)
    assert expected in imports_of(module, path, {expected})
