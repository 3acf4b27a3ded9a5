"""The layout's rules (docs/architecture.md): every module imports, no import cycle, and no code outside
`wtb_local/backends/` or `wtb_local/protocols/` decides by a backend's or a protocol's name.

What the two name rules match, in every `.py` file of wtb_local outside the named package (parsed with
`ast`, so strings in comments and docstrings never count). A *name literal* is a string constant equal to
a registered backend name (`wtb_local.backends.backend_names()`) or protocol name (`protocol_names()`),
alone or inside a tuple, list, set or frozenset literal. A *subject* is the source text of the other
expression; it "names" a backend when it contains `backend` (any case) or is `name` or ends in `.name`,
and a protocol when it contains `protocol` (any case), is `name`, ends in `.name` or is a `.get("name")`.

1. a comparison (`==`, `!=`, `in`, `not in`, `is`, `is not`) between a name literal and a subject that
   names it: `settings.backend == "oracle"`, `name in ("vllm", "openai")`, `backend.name != "replay"`,
   `(protocol, checker) == ("release", "strict")`, `section.get("name") != "paper"`;
2. a call whose callee's text names it, with a name literal argument: `backend_class("scripted")`,
   `protocol_named("paper")`;
3. a subscript of a subject that names it (or whose text contains `checker`) by a name literal:
   `DEFAULT_CHECKER["paper"]`;
4. an assignment of a collection holding a name literal (tuple, list, set, frozenset, or a dict's keys)
   to a target whose name contains `BACKEND` / `PROTOCOL` (any case): `_WAVE_BACKENDS = frozenset({"transformers"})`;
5. a `for` loop over such a collection whose target names it: `for backend in ("vllm", "transformers")`.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

from wtb_local.backends import backend_names
from wtb_local.protocols import protocol_names

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "wtb_local"


def _modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


@pytest.mark.parametrize("name", sorted(set(MODULES) - {"wtb_local.__main__"}))
def test_every_module_imports(name: str) -> None:
    importlib.import_module(name)


# --- import cycles --------------------------------------------------------------------------------


def _imports(name: str, path: Path, *, module_level: bool) -> set[str]:
    """The wtb_local modules `name` imports: at module level only (what runs on import; with the packages
    an import runs first, other than those `name` itself is in), or anywhere (inside functions too)."""
    return _imports_in(name, path.read_text(encoding="utf-8"), is_package=path.name == "__init__.py",
                       module_level=module_level, modules=set(MODULES))


def _imports_in(name: str, source: str, *, is_package: bool, module_level: bool, modules: set[str]) -> set[str]:
    """`_imports` of one module's source, among `modules`."""
    tree = ast.parse(source)
    if module_level:  # top-level statements, into if/try blocks; `if TYPE_CHECKING:` blocks never run
        nodes: list[ast.AST] = []
        for node in tree.body:
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            nodes.extend(ast.walk(node) if isinstance(node, (ast.If, ast.Try)) else [node])
    else:
        nodes = list(ast.walk(tree))
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in modules)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                package = name.split(".") if is_package else name.split(".")[:-1]
                package = package[:len(package) - (node.level - 1)]
                base = ".".join([*package, *([node.module] if node.module else [])])
            named = [f"{base}.{alias.name}" for alias in node.names]
            found.update(m for m in named if m in modules)
            # `from package import submodule` needs the submodule, as `import package.submodule` does; only a
            # name the package's `__init__` defines makes the `__init__` itself a dependency
            if base in modules and any(m not in modules for m in named):
                found.add(base)
    if module_level:
        own = {".".join(name.split(".")[:i]) for i in range(1, name.count(".") + 1)}
        found |= {".".join(m.split(".")[:i]) for m in found for i in range(2, m.count(".") + 1)} - own
    return found - {name}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph.get(node, ())):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_no_module_level_import_cycle() -> None:
    """What runs on import (packages included): a cycle here fails or half-initialises a module."""
    graph = {name: _imports(name, path, module_level=True) for name, path in MODULES.items()}
    assert _cycles(graph) == []


def test_no_import_cycle_between_modules_even_through_deferred_imports() -> None:
    """Imports inside functions count too (`dataset/fetch.py` and `dataset/verified.py` once imported each
    other that way), and so do package `__init__` modules: `backends/__init__.py` → `backends/base.py` →
    the rerun claims → `backends/__init__.py` was such a circle, through a package."""
    graph = {name: _imports(name, path, module_level=False) for name, path in MODULES.items()}
    assert _cycles(graph) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def _graph_of(sources: dict[str, str]) -> dict[str, set[str]]:
    """The deferred-import graph of made-up modules, given as `pkg/__init__.py`-style path → source."""
    names = {path: path.removesuffix(".py").removesuffix("/__init__").replace("/", ".") for path in sources}
    return {name: _imports_in(name, sources[path], is_package=path.endswith("/__init__.py"), module_level=False,
                              modules=set(names.values()))
            for path, name in names.items()}


def test_the_cycle_finder_sees_a_circle_through_a_package_init() -> None:
    """The circle this test once missed: a package's `__init__` imports a module that (inside a function)
    imports a third module, which imports a name from the package."""
    graph = _graph_of({
        "pkg/__init__.py": "from pkg.base import Base\n",
        "pkg/base.py": "def claim():\n    from other.claims import SERVER\n",
        "other/__init__.py": "",
        "other/claims.py": "def rerun():\n    from pkg import backend_class\n",
    })
    assert graph == {"pkg": {"pkg.base"}, "pkg.base": {"other.claims"}, "other": set(), "other.claims": {"pkg"}}
    assert _cycles(graph) == [["other.claims", "pkg", "pkg.base"]]


def test_importing_a_submodule_from_its_package_is_no_edge_to_the_init() -> None:
    """`from pkg import blob` needs `pkg.blob`, as `import pkg.blob` does; a name from `pkg` needs the
    `__init__`."""
    graph = _graph_of({
        "pkg/__init__.py": "from pkg.loader import load\n",
        "pkg/loader.py": "def load():\n    from pkg import blob\n    from pkg import DEFAULT\n",
        "pkg/blob.py": "",
    })
    assert graph == {"pkg": {"pkg.loader"}, "pkg.loader": {"pkg", "pkg.blob"}, "pkg.blob": set()}
    assert _cycles(graph) == [["pkg", "pkg.loader"]]


# --- no decisions by name outside backends/ and protocols/ ------------------------------------------


def _literals(node: ast.AST, names: set[str]) -> set[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value} & names
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return set().union(*(_literals(e, names) for e in node.elts)) if node.elts else set()
    if isinstance(node, ast.Dict):
        return set().union(*(_literals(k, names) for k in node.keys if k is not None)) if node.keys else set()
    if isinstance(node, ast.Call) and ast.unparse(node.func) in ("frozenset", "set", "tuple") and node.args:
        return _literals(node.args[0], names)
    return set()


def _names_backend(text: str) -> bool:
    return "backend" in text.lower() or text == "name" or text.endswith(".name")


def _names_protocol(text: str) -> bool:
    return ("protocol" in text.lower() or text == "name" or text.endswith(".name")
            or bool(re.search(r"\.get\(['\"]name['\"]", text)))


def name_checks(source: str, names: set[str], subject: object, word: str) -> list[str]:
    """`line: code` for every decision by one of `names` in `source` (rules 1-5 of the module docstring)."""
    found = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        hit = False
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for i, operand in enumerate(operands):
                if _literals(operand, names):
                    hit = hit or any(subject(ast.unparse(o)) for j, o in enumerate(operands) if j != i)
        elif isinstance(node, ast.Call) and subject(ast.unparse(node.func)):
            hit = any(_literals(arg, names) for arg in node.args)
        elif isinstance(node, ast.Subscript):
            text = ast.unparse(node.value)
            hit = bool(_literals(node.slice, names)) and (subject(text) or "checker" in text.lower())
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            collection = node.value is not None and not isinstance(node.value, ast.Constant)
            hit = collection and bool(_literals(node.value, names)) and any(
                word in ast.unparse(t).lower() for t in targets)
        elif isinstance(node, ast.For):
            hit = bool(_literals(node.iter, names)) and subject(ast.unparse(node.target))
        if hit:
            found.append(f"{node.lineno}: {ast.unparse(node).splitlines()[0]}")
    return found


def _violations(outside: str, names: set[str], subject: object, word: str) -> list[str]:
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.is_relative_to(PACKAGE / outside):
            continue
        for hit in name_checks(path.read_text(encoding="utf-8"), names, subject, word):
            bad.append(f"{path.relative_to(ROOT)}:{hit}")
    return bad


def test_no_backend_name_checks_outside_backends() -> None:
    """Backends describe themselves (backends/base.py, Capabilities); nothing else tests their names."""
    assert _violations("backends", set(backend_names()), _names_backend, "backend") == []


def test_no_protocol_name_branches_outside_protocols() -> None:
    """A protocol is an object (protocols/base.py); nothing else branches on its name."""
    assert _violations("protocols", set(protocol_names()), _names_protocol, "protocol") == []


BACKENDS = set(backend_names())
PROTOCOLS = set(protocol_names())


@pytest.mark.parametrize(("code", "names", "subject", "word"), [
    ('if settings.backend == "oracle": pass', BACKENDS, _names_backend, "backend"),
    ('x = name in ("vllm", "openai")', BACKENDS, _names_backend, "backend"),
    ('x = backend.name != "replay"', BACKENDS, _names_backend, "backend"),
    ('x = backend_class("scripted")', BACKENDS, _names_backend, "backend"),
    ('_WAVE_BACKENDS = frozenset({"transformers"})', BACKENDS, _names_backend, "backend"),
    ('BACKEND_PACKAGES = {"vllm": 1}', BACKENDS, _names_backend, "backend"),
    ('for backend in ("vllm", "transformers"): pass', BACKENDS, _names_backend, "backend"),
    ('if settings.protocol == "paper": pass', PROTOCOLS, _names_protocol, "protocol"),
    ('x = (protocol, checker) == ("release", "strict")', PROTOCOLS, _names_protocol, "protocol"),
    ('x = section.get("name") != "paper"', PROTOCOLS, _names_protocol, "protocol"),
    ('x = DEFAULT_CHECKER["paper"]', PROTOCOLS, _names_protocol, "protocol"),
    ('x = protocol_named("paper")', PROTOCOLS, _names_protocol, "protocol"),
])
def test_the_name_rules_catch_each_form(code: str, names: set[str], subject: object, word: str) -> None:
    found = name_checks(code, names, subject, word)
    assert [hit.split(":")[0] for hit in found] == ["1"], found


@pytest.mark.parametrize("code", [
    'if style == "openai": pass',  # a tool-call id style, not a backend
    'x = dataset == "release"',  # a dataset name, not a protocol
    'x = row.get("kind") == "paper"',  # the paper's published row, not a protocol
    'PACKAGES = ("vllm", "transformers")',  # package names
    '"""settings.backend == "oracle" in a docstring"""',
])
def test_the_name_rules_leave_other_strings_alone(code: str) -> None:
    assert name_checks(code, BACKENDS, _names_backend, "backend") == []
    assert name_checks(code, PROTOCOLS, _names_protocol, "protocol") == []
