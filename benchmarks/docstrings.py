"""The docstrings of the package, measured: their share of its lines, the median words per
sentence (the models the house follows, lineax and array-api-extra, write 10-14), and the
private helpers whose docstring runs past four lines (``tests/house/test_structure.py`` holds that
count at zero with :func:`helpers`).

``python -m benchmarks.docstrings [-v]`` (``-v`` lists the long helpers).
"""

from __future__ import annotations

import ast
import inspect
import pathlib
import re
import statistics
import sys

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "lsq_backends"


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        yield ".".join(parts[:-1] if parts[-1] == "__init__" else parts), path


def helpers():
    """``[(module, function, docstring lines)]`` of every documented function outside the public
    API: in a private module or named with a leading underscore; not a name of
    ``lsq_backends.__all__``, not a method named as a public class's public method (which it
    may be inherited as), not a solver file's ``solve`` (the solver contract,
    ``_record.Record.solve``); the self-check (``check/``) is public."""
    import lsq_backends
    from lsq_backends._solvers import METHODS

    solvers = (*METHODS, "spectral", "nnls")  # the files with a ``solve`` (tests/house/test_structure.py)
    public = set(lsq_backends.__all__)
    classes = [getattr(lsq_backends, n) for n in public if inspect.isclass(getattr(lsq_backends, n))]
    methods = {m for c in classes for m in dir(c) if not m.startswith("_")}
    out = []
    for name, path in _modules():
        if name.startswith("lsq_backends.check"):
            continue
        private_module = any(part.startswith("_") for part in name.split(".")[1:])
        contract = name.startswith("lsq_backends._solvers.") and name.rsplit(".", 1)[-1] in solvers
        tree = ast.parse(path.read_text())
        exempt = set()
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                exempt |= {id(f) for f in node.body if isinstance(f, ast.FunctionDef) and f.name in methods}
            if isinstance(node, ast.FunctionDef) and contract and node.name == "solve":
                exempt.add(id(node))
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef) or id(node) in exempt or node.name in public:
                continue
            doc = ast.get_docstring(node, clean=False)
            if doc and (private_module or node.name.startswith("_")) and not node.name.startswith("__"):
                out.append((name, node.name, doc.count("\n") + 1))
    return out


def share_and_sentences():
    """``(docstring lines, all lines, median words per sentence)`` of the whole package."""
    total = doc = 0
    words = []
    for _, path in _modules():
        src = path.read_text()
        total += src.count("\n")
        for node in ast.walk(ast.parse(src)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
                text = ast.get_docstring(node, clean=False)
                if text:
                    doc += text.count("\n") + 1
                    sentences = re.split(r"(?<=[.;:!?])\s+(?=[A-Z(`])", " ".join(text.split()))
                    words += [len(s.split()) for s in sentences if len(s.split()) >= 3]
    return doc, total, statistics.median(words)


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    doc, total, median = share_and_sentences()
    found = helpers()
    long = sorted((lines, f"{module}.{name}") for module, name, lines in found if lines > 4)
    print(f"docstring lines {doc} / {total} = {doc / total:.0%}; median words per sentence {median:g}")
    print(f"private helpers: {len(found)}, with a docstring over 4 lines: {len(long)}")
    if "-v" in args:
        for lines, where in reversed(long):
            print(f"{lines:4d} {where}")


if __name__ == "__main__":
    main()
