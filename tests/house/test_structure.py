"""The shape of the package, checked: folders by layer, each importing only the layers below it;
no import circle (function-level imports included); no solver importing another; no private name
imported across modules; no module past ~400 lines; no private function of more than 8 parameters.
Static (ast): runs in the numpy session only."""

from __future__ import annotations

import ast
import warnings
from pathlib import Path

import pytest

from lsq_backends._solvers import METHODS

PACKAGE = Path(__file__).resolve().parents[2] / "lsq_backends"
MAX_LINES = 420  # "about 400": a little slack, so that the limit is a guide and not a trap
HARD_MAX_LINES = 600

pytestmark = pytest.mark.usefixtures("numpy_reference")


def _modules():
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _imports(mods):
    """module -> set of package modules it imports (anywhere in its body), and the private
    names imported from other modules."""
    graph, private = {m: set() for m in mods}, []
    for mod, path in mods.items():
        pkg = mod if path.name == "__init__.py" else mod.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.ImportFrom) and node.level):
                continue
            base = pkg.split(".")[: len(pkg.split(".")) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                full = f"{target}.{alias.name}"
                dep = full if full in mods else target
                if dep in mods and dep != mod:
                    graph[mod].add(dep)
                if alias.name.startswith("_") and full not in mods:
                    private.append(f"{mod} imports {target}.{alias.name}")
    return graph, private


def _cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    return out


def test_no_private_name_crosses_modules():
    _, private = _imports(_modules())
    assert not private, "\n".join(private)


def test_no_import_circle():
    graph, _ = _imports(_modules())
    assert not _cycles(graph)


# The solvers (every method of the registry, the path's and nnls's) build on the building blocks
# (``_solvers/linalg``) and the contract (``_record``), never on one another.
SOLVERS = (*METHODS, "spectral", "nnls")


def test_solvers_never_import_each_other():
    graph, _ = _imports(_modules())
    names = {f"lsq_backends._solvers.{s}" for s in SOLVERS}
    assert names <= set(graph)
    crossing = sorted(f"{m} imports {d}" for m in names for d in graph[m] & names)
    assert not crossing, "\n".join(crossing)


# The package's layers, bottom up: each folder (or module at the package's top) imports only
# from layers below its own (the layer table of docs/development.md; its reading order runs top down).
LAYERS = (
    ("_backend", "_result"),  # the array libraries (one entry: ``_backend._compat``); the result type
    ("_problem",),  # the problem as the solvers take it: checks, preparation, X as a linear map
    ("_solvers",),  # the methods, on their building blocks (``_solvers/linalg``); one door, its ``__init__``
    ("_types", "_autodiff", "_summary", "capabilities", "check"),
    ("_nnls", "_streaming", "_sklearn"),
    ("_operator_fit",),  # lstsq and ridge on a linear map (sparse, operators)
    ("_ridge",),  # penalty grids: paths, cross-validation
    ("_api",),  # lstsq and ridge
    ("diagnostics", "estimators"),
    ("__init__",),
)
MAX_TOP_ENTRIES = 20


def _layer_graph():
    """{folder or top module: the folders and top modules it imports}."""
    graph, _ = _imports(_modules())
    room = lambda mod: mod.split(".")[1] if "." in mod else "__init__"  # noqa: E731
    out = {room(m): set() for m in graph}
    for mod, deps in graph.items():
        out[room(mod)] |= {room(d) for d in deps} - {room(mod)}
    return out


# Imports from outside ``_solvers/`` that name one of its inner modules (``from .._solvers.linalg.x import``, or
# ``from .._solvers import spectral``, a module) rather than what its ``__init__`` exports: at most these.
SOLVER_SIDE_DOORS = {
    ("lsq_backends._ridge._cv", "lsq_backends._solvers.spectral"),  # the penalty grids use the spectral solver whole
    ("lsq_backends._ridge._kfold", "lsq_backends._solvers.spectral"),
    ("lsq_backends._ridge._operator_cv", "lsq_backends._solvers.spectral"),
    ("lsq_backends._api", "lsq_backends._solvers.linalg.lean"),  # the lean route: its gate read between its steps
    ("lsq_backends._autodiff._derivatives", "lsq_backends._solvers.linalg.lean"),  # and its derivative rule
}


def test_the_solver_layer_has_one_door():
    import ast
    import inspect

    import lsq_backends._solvers as solvers

    found = set()
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        if rel.parts[1:2] == ("_solvers",):
            continue
        module = ".".join(rel.parts if rel.name != "__init__" else rel.parts[:-1])
        package = list(rel.parts[:-1])
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom):
                continue
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else [])) if node.level else node.module
            if target.startswith("lsq_backends._solvers."):
                found.add((module, target))
            elif target == "lsq_backends._solvers":  # a module the door exports is a side door too
                inner = {a.name for a in node.names if inspect.ismodule(getattr(solvers, a.name))}
                found |= {(module, getattr(solvers, name).__name__) for name in inner}
    assert found <= SOLVER_SIDE_DOORS, sorted(found - SOLVER_SIDE_DOORS)
    assert len(SOLVER_SIDE_DOORS) <= 5


def test_every_layer_imports_only_the_layers_below():
    graph = _layer_graph()
    level = {room: i for i, rooms in enumerate(LAYERS) for room in rooms}
    assert set(graph) == set(level), "each folder and top module has its place in LAYERS"
    upward = sorted(f"{a} imports {b}" for a, deps in graph.items() for b in deps if level[b] >= level[a])
    assert not upward, "\n".join(upward)


MAX_IMPORT_LEVELS = 10


def test_import_levels():
    """The longest chain of imports between folders and top modules: a newcomer reads the
    package in at most this many steps, bottom up."""
    graph = _layer_graph()
    levels: dict = {}

    def level(room):
        if room not in levels:
            levels[room] = 1 + max((level(dep) for dep in graph[room]), default=0)
        return levels[room]

    deepest = max(level(room) for room in graph)
    assert deepest <= MAX_IMPORT_LEVELS, levels


def test_the_top_of_the_package_stays_small():
    entries = [p.name for p in PACKAGE.iterdir() if p.name != "__pycache__" and p.name != "py.typed"]
    assert len(entries) <= MAX_TOP_ENTRIES, sorted(entries)


def test_the_backend_layer_has_one_entry():
    """Outside ``_backend/``, the package reaches the array libraries' quirks through ``_compat`` only."""
    graph, _ = _imports(_modules())
    inner = sorted(
        f"{m} imports {d}"
        for m, deps in graph.items()
        if not m.startswith("lsq_backends._backend")
        for d in deps
        if d.startswith("lsq_backends._backend.") and d != "lsq_backends._backend._compat"
    )
    assert not inner, "\n".join(inner)


LIBRARY_TESTS_ALLOWED = ("lsq_backends/_backend/", "lsq_backends/_autodiff/")


def _library_tests(path):
    """``array_api_compat.is_*`` tests in ``path`` (whatever the module's alias for it)."""
    tree = ast.parse(path.read_text())
    aliases, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname or a.name for a in node.names if a.name == "array_api_compat"}
        elif isinstance(node, ast.ImportFrom) and node.module == "array_api_compat":
            found += [f"imports {a.name}" for a in node.names if a.name.startswith("is_")]
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            if node.attr.startswith("is_"):
                found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_libraries_are_told_apart_in_one_layer():
    """Outside ``_backend/`` (and the derivative rules' wiring, ``_autodiff/``), code asks
    ``_compat``'s record of the library (``traits(xp).free_to_read``, ...) or its named predicates
    (``is_array``, ...), never
    which library an array comes from."""
    root = PACKAGE.parent
    found = {
        rel: hits
        for path in PACKAGE.rglob("*.py")
        if not (rel := path.relative_to(root).as_posix()).startswith(LIBRARY_TESTS_ALLOWED)
        if (hits := _library_tests(path))
    }
    assert not found, found
    assert _library_tests(PACKAGE / "_backend" / "_arrays.py"), "the checker finds the layer's own tests"


def test_building_blocks_never_import_a_method():
    """``_solvers/linalg`` sits below the methods: it may use the contract (``_record``), not
    a method or the registry."""
    graph, _ = _imports(_modules())
    blocks = [m for m in graph if m.startswith("lsq_backends._solvers.linalg")]
    up = sorted(
        f"{m} imports {d}"
        for m in blocks
        for d in graph[m]
        if d.startswith("lsq_backends._solvers") and not d.startswith("lsq_backends._solvers.linalg")
        and d != "lsq_backends._solvers._record"
    )  # fmt: skip
    assert blocks and not up, "\n".join(up)


def test_the_checker_sees_a_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_module_past_about_400_lines():
    """The package, its tests, its benchmarks and the docs' hooks. Cohesion sizes a file: past
    ~400 lines a warning (is there a second concept inside?), past 600 a failure."""
    root = PACKAGE.parent
    files = [p for d in ("lsq_backends", "tests", "benchmarks", "docs") for p in (root / d).rglob("*.py")]
    sizes = {str(p.relative_to(root)): len(p.read_text().splitlines()) for p in files}
    assert len(files) > 100
    long = {f: n for f, n in sizes.items() if n > MAX_LINES}
    if long:
        warnings.warn(f"files past {MAX_LINES} lines (is a second concept inside?): {long}", UserWarning, stacklevel=1)
    too_long = {f: n for f, n in sizes.items() if n > HARD_MAX_LINES}
    assert not too_long, too_long


MAX_HELPER_DOCSTRING_LINES = 4


def test_private_helpers_state_their_contract_briefly():
    """A private helper's docstring is its contract in one to four lines (shapes, return, error
    bound, which backends take which branch); derivations go to the module's docstring,
    measurements to the design notes (docs/design-notes.md). Counted by
    ``python -m benchmarks.docstrings``."""
    from benchmarks.docstrings import helpers

    found = helpers()
    assert len(found) > 100
    long = sorted(f"{m}.{f}: {n} lines" for m, f, n in found if n > MAX_HELPER_DOCSTRING_LINES)
    assert not long, "\n".join(long)


MAX_PARAMETERS = 8
# Private functions that take an entry point's public arguments as it binds them (the sparse and
# operator routes of ``lstsq``/``ridge`` and ``ridge_cv``): the public signature, in another module.
ENTRY_MIRRORS = {"lsq_backends._operator_fit.fit", "lsq_backends._ridge._operator_cv.ridge_cv_operator"}


def _public_names():
    """``module.qualname`` of what ``lsq_backends`` exports (functions, and classes with their methods)."""
    import lsq_backends

    objects = [getattr(lsq_backends, name) for name in lsq_backends.__all__]
    return {f"{o.__module__}.{o.__qualname__}" for o in objects if hasattr(o, "__qualname__")}


def test_no_private_function_takes_more_than_eight_parameters():
    """What travels together travels as one argument (``_solvers.Given``, a fold, an SVD's
    factors): a function the package does not export takes at most 8 parameters (``self`` not
    counted)."""
    public, wide = _public_names(), []
    for mod, path in _modules().items():
        tree = ast.parse(path.read_text())
        owners = {id(f): c.name for c in ast.walk(tree) if isinstance(c, ast.ClassDef) for f in c.body}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            a = node.args
            names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg) if x]
            names = names[1:] if names[:1] in (["self"], ["cls"]) else names
            owner = owners.get(id(node))
            name = f"{mod}.{owner}.{node.name}" if owner else f"{mod}.{node.name}"
            exported = (f"{mod}.{owner}" if owner else name) in public
            if len(names) > MAX_PARAMETERS and not exported and name not in ENTRY_MIRRORS:
                wide.append(f"{name}: {len(names)} parameters")
    assert not wide, "\n".join(sorted(wide))


def test_the_backend_front_door_fits_a_screen():
    """``_backend/_compat.py`` defines nothing: it imports its parts' names and lists them by topic in ``__all__``
    (every name once), so that a reader takes the layer in from one page."""
    import ast

    from lsq_backends._backend import _compat

    tree = ast.parse((PACKAGE / "_backend" / "_compat.py").read_text())
    defined = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    assert not defined, [n.name for n in defined]
    assert len(_compat.__all__) == len(set(_compat.__all__))
    assert all(hasattr(_compat, name) for name in _compat.__all__)
    assert len((PACKAGE / "_backend" / "_compat.py").read_text().splitlines()) <= 150
