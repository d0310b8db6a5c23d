"""The shape of the code base, checked statically (the architecture's rules as a test).

Parses every module of ``ndd``, ``compiler`` and ``runtime`` (imports inside functions counted:
a cycle closed by an in-function import is still a cycle) and fails on:

* an import cycle among our modules;
* a ``_private`` name imported from another module (beyond a short, explained allowlist);
* ``compiler/`` importing numpy, torch or cupy (it reasons on metadata only);
* ``runtime/`` importing ``ndd`` (the runtime executes plans; it never sees the front end);
* a kernel module importing the handle modules (kernels get storage, never ``Tensor``/``Batch``);
* the core of ``ndd`` importing its tools (CLI, benchmarks' pipelines, rendering, datasets);
* more than a few imports of our own modules inside functions (they hide the structure);
* more than one module over 500 lines (a module holds one thing).
"""
from __future__ import annotations

import ast
import pathlib

import networkx as nx
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
PACKAGES = ("ndd", "compiler", "runtime")

#: (importing module, imported module, name): why it is allowed.
PRIVATE_ALLOWED: dict[tuple[str, str, str], str] = {}

#: in-function imports of our own modules tolerated: lazy imports of modules that pull in heavy
#: dependencies (the kernel catalogue: torch and nvImageCodec; libm: numba), each with its
#: reason in place. 3 today.
MAX_IN_FUNCTION = 10

#: lines above which a module is too long; at most one may be (``runtime/codecs/image.py``)
MAX_LINES, MAX_LONG_MODULES = 500, 1


def _module_name(path: pathlib.Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, pathlib.Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            out[_module_name(path)] = path
    return out


MODULES = _modules()


class _Import:
    __slots__ = ("source", "target", "name", "line", "in_function", "external")

    def __init__(self, source, target, name, line, in_function, external=False):
        self.source, self.target, self.name = source, target, name
        self.line, self.in_function, self.external = line, in_function, external


def _imports_of(module: str, path: pathlib.Path) -> list[_Import]:
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[_Import] = []

    def visit(node, in_function, type_checking):
        for child in ast.iter_child_nodes(node):
            fn = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                   ast.Lambda))
            tc = type_checking or (isinstance(child, ast.If)
                                   and "TYPE_CHECKING" in ast.unparse(child.test))
            if isinstance(child, ast.Import) and not tc:
                for alias in child.names:
                    top = alias.name.split(".")[0]
                    if top in PACKAGES:
                        target = alias.name
                        while target not in MODULES and "." in target:
                            target = target.rpartition(".")[0]
                        found.append(_Import(module, target, None, child.lineno, fn))
                    else:
                        found.append(_Import(module, alias.name, None, child.lineno, fn, True))
            elif isinstance(child, ast.ImportFrom) and not tc:
                if child.level:
                    base = package.split(".")
                    base = base[:len(base) - (child.level - 1)]
                    full = ".".join(base + ([child.module] if child.module else []))
                else:
                    full = child.module or ""
                if full.split(".")[0] not in PACKAGES:
                    found.append(_Import(module, full, None, child.lineno, fn, True))
                else:
                    for alias in child.names:
                        sub = f"{full}.{alias.name}"
                        if sub in MODULES:
                            found.append(_Import(module, sub, None, child.lineno, fn))
                        else:
                            found.append(_Import(module, full, alias.name, child.lineno, fn))
            visit(child, fn, tc)

    visit(tree, False, False)
    return found


IMPORTS = [imp for m, p in MODULES.items() for imp in _imports_of(m, p)]
OWN = [i for i in IMPORTS if not i.external and i.target in MODULES]


def _where(imp: _Import) -> str:
    return f"{MODULES[imp.source].relative_to(ROOT)}:{imp.line}"


def test_no_import_cycles():
    graph = nx.DiGraph()
    for imp in OWN:
        # a package importing its own submodules (re-exports) is not a dependency cycle
        if imp.target != imp.source and not imp.target.startswith(imp.source + "."):
            graph.add_edge(imp.source, imp.target)
    cycles = [sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1]
    assert not cycles, "import cycles (in-function imports counted):\n" + "\n".join(
        " <-> ".join(c) for c in cycles)


def test_no_private_names_across_modules():
    bad = [f"{_where(i)}: {i.name} from {i.target}" for i in OWN
           if i.name and i.name.startswith("_") and not i.name.startswith("__")
           and i.target != i.source and (i.source, i.target, i.name) not in PRIVATE_ALLOWED]
    assert not bad, "private names imported across modules:\n" + "\n".join(bad)


def test_few_imports_inside_functions():
    inner = [f"{_where(i)}: {i.target}" for i in OWN if i.in_function]
    assert len(inner) <= MAX_IN_FUNCTION, (
        f"{len(inner)} in-function imports of our own modules (at most {MAX_IN_FUNCTION}):\n"
        + "\n".join(inner))


@pytest.mark.parametrize("package, forbidden", [
    ("compiler", ("numpy", "torch", "cupy", "ndd", "runtime")),
    ("runtime", ("ndd",)),
])
def test_layering(package, forbidden):
    bad = [f"{_where(i)}: {i.target}" for i in IMPORTS
           if i.source.split(".")[0] == package and i.target.split(".")[0] in forbidden]
    assert not bad, f"{package}/ imports what it must not:\n" + "\n".join(bad)


def test_kernels_never_see_handles():
    handles = {"ndd._tensor", "ndd._batch"}
    bad = [f"{_where(i)}: {i.target}" for i in IMPORTS
           if i.source.startswith("runtime.kernels") and i.target in handles]
    assert not bad, "\n".join(bad)


def test_the_core_never_imports_its_tools():
    """CLI, benchmarks' pipelines, rendering (``ndd.tools``) and dataset building
    (``ndd.datasets``) sit on top of the library; nothing below them imports them."""
    tools = ("ndd.tools", "ndd.datasets")
    bad = [f"{_where(i)}: {i.target}" for i in OWN
           if i.target.startswith(tools) and not i.source.startswith(tools)]
    assert not bad, "\n".join(bad)


def test_modules_are_short():
    long = sorted(f"{p.relative_to(ROOT)} ({n} lines)" for p in MODULES.values()
                  if (n := len(p.read_text().splitlines())) > MAX_LINES)
    assert len(long) <= MAX_LONG_MODULES, "modules over 500 lines:\n" + "\n".join(long)
