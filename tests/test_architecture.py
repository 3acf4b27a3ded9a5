"""The layout's rules (docs/architecture.md): every module imports, no import cycle, and no code outside
`wtb_local/engines/` or `wtb_local/benchmark/protocols/` decides by a backend's or a protocol's name.

What the two name rules match, in every `.py` file of wtb_local outside the named package (parsed with
`ast`, so strings in comments and docstrings never count). A *name literal* is a string constant equal to
a registered backend name (`wtb_local.engines.backend_names()`) or protocol name (`protocol_names()`),
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
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from wtb_local.benchmark.protocols import protocol_names
from wtb_local.engines import backend_names

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
    assert _violations("engines", set(backend_names()), _names_backend, "backend") == []


def test_no_protocol_name_branches_outside_protocols() -> None:
    """A protocol is an object (protocols/base.py); nothing else branches on its name."""
    assert _violations("benchmark/protocols", set(protocol_names()), _names_protocol, "protocol") == []


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


# --- rooms: the two halves and the core ---------------------------------------------------------------------
# A first-level folder of wtb_local is a "room" (docs/architecture.md, "The rooms"). Imports point down this
# table only: the writer half (run, engines) makes run directories, the reader half (analysis) reads them,
# the core (benchmark, formats, contract) serves both and imports neither; cli wires both halves to the
# command line. Every import counts, deferred ones and `if TYPE_CHECKING:` ones included.
ROOMS: dict[str, frozenset[str]] = {
    "contract": frozenset(),
    "formats": frozenset({"contract"}),
    "benchmark": frozenset({"formats", "contract"}),
    "engines": frozenset({"benchmark", "formats", "contract"}),
    "run": frozenset({"engines", "benchmark", "formats", "contract"}),
    "analysis": frozenset({"benchmark", "formats", "contract"}),
    "cli": frozenset({"run", "analysis", "engines", "benchmark", "formats", "contract"}),
}
READER = frozenset({"analysis"})
WRITER = frozenset({"run", "engines"})
CORE = frozenset({"benchmark", "formats", "contract"})
READER_TO_WRITER_LEFT: frozenset[tuple[str, str]] = frozenset()


def _rooms(root: Path) -> set[str]:
    rooms = {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    return rooms | {p.stem for p in root.glob("*.py") if p.stem not in {"__init__", "__main__"}}


def _room_imports(root: Path) -> list[tuple[str, str, str]]:
    """(room, file relative to root's parent, room it imports) for every import of another room."""
    rooms = _rooms(root)
    found = []
    for path in sorted(root.rglob("*.py")):
        parts = path.relative_to(root).with_suffix("").parts
        here, package = parts[0], [root.name, *parts[:-1]]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[:len(package) - (node.level - 1)] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])]) if node.level else node.module or ""
                names = [module, *(f"{module}.{alias.name}" for alias in node.names)]
            else:
                continue
            for name in names:
                bits = name.split(".")
                if len(bits) > 1 and bits[0] == root.name and bits[1] in rooms and bits[1] != here:
                    found.append((here, path.relative_to(root.parent).as_posix(), bits[1]))
    return found


def _room_edges(root: Path) -> dict[tuple[str, str], str]:
    """(room, room it imports) -> the first file that does."""
    edges: dict[tuple[str, str], str] = {}
    for here, path, there in _room_imports(root):
        edges.setdefault((here, there), path)
    return edges


def _mutual(edges: dict[tuple[str, str], str]) -> list[str]:
    return sorted(f"{a} <-> {b} ({edges[(a, b)]} / {edges[(b, a)]})" for a, b in edges if a < b and (b, a) in edges)


def _file_edges(root: Path, sources: frozenset[str], targets: frozenset[str]) -> set[tuple[str, str]]:
    """(file, target room) for every file of a `sources` room importing a `targets` room."""
    return {(path, there) for here, path, there in _room_imports(root) if here in sources and there in targets}


def test_no_two_first_level_folders_import_each_other() -> None:
    assert _mutual(_room_edges(PACKAGE)) == []


def test_imports_point_down_the_rooms() -> None:
    """Every room is in the table, and every import between rooms is one the table allows (the reader
    half's listed exceptions aside)."""
    rooms = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert rooms == set(ROOMS), "a first-level folder not in ROOMS: give it its place in the table"
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == ["__init__.py", "__main__.py"]
    wrong = sorted((path, here, there) for here, path, there in _room_imports(PACKAGE)
                   if here in ROOMS and there not in ROOMS[here] and (path, there) not in READER_TO_WRITER_LEFT)
    assert wrong == [], "an import against the rooms' order (docs/architecture.md, \"The rooms\")"


def test_the_reader_half_never_imports_the_writer_half() -> None:
    """What a reader needs of a run lives in the core (contract/: paths, lock, manifest, a recorded run's
    files); a reader command that needs a run (a replay) is handed the function by `cli/`."""
    assert sorted(_file_edges(PACKAGE, READER, WRITER)) == [], "a reader module imports the runner or a backend"


def test_the_core_imports_neither_half() -> None:
    assert sorted(_file_edges(PACKAGE, CORE, READER | WRITER | {"cli"})) == []


def test_the_folder_rules_see_deferred_imports_and_folders(tmp_path: Path) -> None:
    """A pair made only by an import inside a function, through a subpackage, is found; so is a reader
    module importing the writer half."""
    root = tmp_path / "pkg"
    for folder, source in {"a": "from pkg.b.deep import x\n", "b": "", "b/deep": "def f():\n    import pkg.a\n",
                           "analysis": "def g():\n    from pkg.run.job import run_job\n", "run": ""}.items():
        (root / folder).mkdir(parents=True)
        (root / folder / "__init__.py").write_text(source)
    (root / "__init__.py").write_text("")
    assert _mutual(_room_edges(root)) == ["a <-> b (pkg/a/__init__.py / pkg/b/deep/__init__.py)"]
    assert _file_edges(root, READER, WRITER) == {("pkg/analysis/__init__.py", "run")}


# --- deferred imports --------------------------------------------------------------------------------------
# An import inside a function is for an optional heavy dependency, or says why on its line:
# `from wtb_local.x import y  # deferred: <reason>` (start-up time of a command that does not need it, ...).

OPTIONAL_HEAVY = frozenset({"torch", "vllm", "transformers", "tokenizers", "huggingface_hub", "accelerate",
                            "safetensors", "numpy", "matplotlib", "ray", "inspect_ai", "mlflow"})
DEFERRED_REASON = re.compile(r"#.*\bdeferred: \S")
STARTUP = "deferred: start-up"
# Files whose imports inside functions were neither heavy nor explained when this rule came, and how many:
# a count may only go down (each such import moved to module level or given its reason).
DEFERRED_LEFT: dict[str, int] = {
    "wtb_local/engines/__init__.py": 1,
    "wtb_local/engines/base.py": 1,
    "wtb_local/engines/openai_server.py": 2,
    "wtb_local/engines/vllm_engine.py": 1,
    "wtb_local/cli/health.py": 2,
    "wtb_local/cli/parsers.py": 1,
    "wtb_local/cli/render.py": 1,
    "wtb_local/cli/report.py": 1,
    "wtb_local/cli/rescore.py": 3,
    "wtb_local/cli/score.py": 3,
    "wtb_local/analysis/commands/merge_runs.py": 6,
    "wtb_local/analysis/commands/parser_comparison.py": 2,
    "wtb_local/benchmark/dataset/loader.py": 2,
    "wtb_local/engines/doctor.py": 4,
    "wtb_local/analysis/explain/plan.py": 1,
    "wtb_local/analysis/explain/render.py": 1,
    "wtb_local/contract/install_command.py": 1,
    "wtb_local/benchmark/protocols/base.py": 1,
    "wtb_local/benchmark/protocols/lenient.py": 1,
    "wtb_local/benchmark/protocols/paper.py": 5,
    "wtb_local/benchmark/protocols/parse_rules.py": 1,
    "wtb_local/benchmark/protocols/setup.py": 1,
    "wtb_local/formats/rendering/probe.py": 2,
    "wtb_local/formats/rendering/renderer.py": 1,
    "wtb_local/formats/rendering/templates.py": 1,
    "wtb_local/analysis/reports/build.py": 2,
    "wtb_local/analysis/reports/health.py": 2,
    "wtb_local/analysis/reports/html.py": 1,
    "wtb_local/analysis/reports/present.py": 2,
    "wtb_local/analysis/reports/runs.py": 4,
    "wtb_local/analysis/roster/plan.py": 4,
    "wtb_local/analysis/roster/report.py": 6,
    "wtb_local/run/job.py": 4,
    "wtb_local/run/loop/progress.py": 1,
    "wtb_local/run/loop/steps.py": 1,
    "wtb_local/run/record/run_record.py": 3,
    "wtb_local/run/setup/dtype.py": 1,
    "wtb_local/run/setup/parser_choice.py": 2,
    "wtb_local/run/setup/paths.py": 2,
    "wtb_local/run/setup/prepare.py": 3,
    "wtb_local/run/setup/thinking.py": 2,
    "wtb_local/benchmark/scoring/taxonomy.py": 1,
}


def _unexplained_deferred(source: str) -> list[int]:
    """Line numbers of imports inside functions that name no optional heavy dependency and give no reason."""
    lines = source.splitlines()
    found = []
    for function in ast.walk(ast.parse(source)):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(function):
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if node_level_relative := getattr(node, "level", 0):
                modules = [f"relative{node_level_relative}"]
            if all(m.split(".")[0] in OPTIONAL_HEAVY for m in modules):
                continue
            statement = lines[node.lineno - 1:node.end_lineno]
            if not any(DEFERRED_REASON.search(line) for line in statement):
                found.append(node.lineno)
    return sorted(set(found))


def test_deferred_imports_are_heavy_or_say_why() -> None:
    counts = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        unexplained = _unexplained_deferred(path.read_text(encoding="utf-8"))
        if unexplained:
            counts[path.relative_to(ROOT).as_posix()] = len(unexplained)
    grown = {path: (count, DEFERRED_LEFT.get(path, 0)) for path, count in counts.items()
             if count > DEFERRED_LEFT.get(path, 0)}
    assert grown == {}, "imports inside functions with no `# deferred: <reason>` (found, allowed)"
    shrunk = {path: (counts.get(path, 0), left) for path, left in DEFERRED_LEFT.items() if counts.get(path, 0) < left}
    assert shrunk == {}, "fewer unexplained deferred imports than listed: lower DEFERRED_LEFT"


def test_the_deferred_rule_sees_each_form() -> None:
    source = ("import os\n"
              "def f():\n"
              "    import torch\n"
              "    from vllm.engine import x\n"
              "    from wtb_local.benchmark.scoring import score  # deferred: start-up of `--help`\n"
              "    from wtb_local.analysis.reports import (  # deferred: start-up\n"
              "        a, b)\n"
              "    import json\n"
              "    async def g():\n"
              "        from wtb_local.run import job\n")
    assert _unexplained_deferred(source) == [8, 10]


_STARTUP_PROBE = """
import ast, importlib, importlib.util, json, os, pathlib, sys
found = {}
for pair in sys.argv[1:]:
    # the file is read by its path: find_spec would import the module's parent packages into this process,
    # and every child after it would find them (and what their __init__ imports) loaded already
    name, path = pair.split("=", 1)
    lines = pathlib.Path(path).read_text(encoding="utf-8").splitlines()
    targets = []
    for function in ast.walk(ast.parse("\\n".join(lines))):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(function):
                said = "STARTUP" in " ".join(lines[node.lineno - 1:node.end_lineno]) if hasattr(node, "end_lineno") else False
                if isinstance(node, ast.ImportFrom) and not node.level and said:
                    targets.append((node.lineno, node.module))
                elif isinstance(node, ast.Import) and said:
                    targets += [(node.lineno, alias.name) for alias in node.names]
    read, write = os.pipe()
    if os.fork() == 0:  # a fresh import of `name` alone, in a child of this bare interpreter
        importlib.import_module(name)
        os.write(write, json.dumps([[line, module] for line, module in targets if module in sys.modules]).encode())
        os._exit(0)
    os.close(write)
    data = b""
    while chunk := os.read(read, 1 << 16):
        data += chunk
    os.wait()
    if json.loads(data):
        found[name] = json.loads(data)
print(json.dumps(found))
""".replace("STARTUP", STARTUP)


@pytest.mark.slow
def test_start_up_reasons_hold() -> None:
    """An import deferred for start-up time keeps its module out of the importing module's own import:
    importing the module alone (a fresh interpreter) does not load it already."""
    pairs = sorted(f"{name}={path}" for name, path in MODULES.items() if STARTUP in path.read_text(encoding="utf-8"))
    done = subprocess.run([sys.executable, "-c", _STARTUP_PROBE, *pairs], capture_output=True, text=True,
                          check=True, cwd=ROOT, timeout=120)
    assert json.loads(done.stdout) == {}, "these modules are loaded anyway: import them at module level"


# --- the manifest is read through its model ------------------------------------------------------------
# docs/architecture.md, "The run directory": `contract/run_dir.py` is the one module that parses a
# manifest.json (its `_read`); every other reads it through `RunDir.manifest`/`load_manifest` (its model) or,
# to update and write it back, `load_manifest_data`.
MANIFEST_PARSER = "wtb_local/contract/run_dir.py"


def _parses_manifest(source: str) -> list[str]:
    """Functions (and the module body) that name the manifest file and call json.load or json.loads."""
    tree = ast.parse(source)
    scopes: list[tuple[str, ast.AST]] = [("<module>", tree)]
    scopes += [(node.name, node) for node in ast.walk(tree) if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
    found = []
    for name, scope in scopes:
        nodes = list(ast.walk(scope)) if name != "<module>" else [
            n for stmt in tree.body if not isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            for n in ast.walk(stmt)]
        names_file = any((isinstance(n, ast.Constant) and n.value == "manifest.json")
                         or (isinstance(n, ast.Name) and n.id == "MANIFEST_NAME")
                         or (isinstance(n, ast.Attribute) and n.attr == "MANIFEST_NAME") for n in nodes)
        parses = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("load", "loads")
                     and isinstance(n.func.value, ast.Name) and n.func.value.id == "json" for n in nodes)
        if names_file and parses:
            found.append(name)
    return found


def test_only_the_contract_parses_a_manifest() -> None:
    found = {path.relative_to(ROOT).as_posix(): _parses_manifest(path.read_text(encoding="utf-8"))
             for path in sorted(PACKAGE.rglob("*.py"))}
    assert {path: names for path, names in found.items() if names and path != MANIFEST_PARSER} == {}, (
        "manifest.json parsed outside contract/run_dir.py: read it with load_manifest")
    assert found[MANIFEST_PARSER] == ["_read"]


# Every file name inside a run directory is written once, in contract/paths.py (docs/files.md, "The run
# directory as one object"): a second spelling is a second place to change.
RUN_FILE_NAMES = ("manifest.json", "Wild-Tool-Bench_result.jsonl", "Wild-Tool-Bench_score.jsonl",
                  "Wild-Tool-Bench_metric.json", "summary.md", "summary.json", "repeats.json", "run.lock",
                  "internal_errors.jsonl")


def _run_file_names(source: str) -> list[str]:
    """`line: name` of each string literal that is a run directory's file name."""
    return [f"{node.lineno}: {node.value}" for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and node.value in RUN_FILE_NAMES]


def test_every_run_directory_file_name_is_written_once() -> None:
    found = {path.relative_to(ROOT).as_posix(): _run_file_names(path.read_text(encoding="utf-8"))
             for path in sorted(PACKAGE.rglob("*.py")) if path != PACKAGE / "contract" / "paths.py"}
    assert {path: names for path, names in found.items() if names} == {}
    defined = [hit.split(": ")[1] for hit in _run_file_names((PACKAGE / "contract" / "paths.py").read_text(encoding="utf-8"))]
    assert sorted(defined) == sorted(RUN_FILE_NAMES)  # each once, there


def _reads_manifest_dict(source: str) -> list[str]:
    """`line: code` of every read of a manifest as a dict: a `.get(...)` call on, or a `[...]` read of, a
    name or attribute whose own name contains `manifest` (`manifest.get("status")`, `manifest["shard"]`,
    `outcome.manifest.get(...)`, `self.manifest["invocations"]`). A `Manifest` model has neither, so such
    a read is always of a dict; a write (`manifest["status"] = ...`, `manifest.update(...)`) is not a read."""
    def is_manifest(node: ast.AST) -> bool:
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
        return "manifest" in name.lower()

    found = []
    for node in ast.walk(ast.parse(source)):
        read = (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                and is_manifest(node.func.value)) or (
            isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and is_manifest(node.value))
        if read:
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_manifest_is_read_as_a_dict_outside_the_contract() -> None:
    """Readers and writers read a manifest's values through its model (`load_manifest`, `as_manifest`, a
    `RunOutcome.recorded`); the writers only build and update the dict they write."""
    found = {path.relative_to(ROOT).as_posix(): _reads_manifest_dict(path.read_text(encoding="utf-8"))
             for path in sorted(PACKAGE.rglob("*.py")) if not path.is_relative_to(PACKAGE / "contract")}
    assert {path: reads for path, reads in found.items() if reads} == {}


def test_the_manifest_dict_rule_sees_each_read() -> None:
    source = ("status = manifest.get('status')\n"
              "shard = first_manifest['shard']\n"
              "cuts = outcome.manifest.get('summary')\n"
              "self.manifest['invocations'].append(x)\n"
              "manifest['status'] = 'running'\n"
              "manifest.update(status='complete')\n"
              "name = manifest.section('config').get('model')\n"
              "rows = data.get('rows')\n")
    assert [hit.split(":")[0] for hit in _reads_manifest_dict(source)] == ["1", "2", "3", "4"]


def _reads_section_by_name(source: str) -> list[str]:
    """`line: code` of every read of a manifest section by its name: `<run or manifest>.section("name")` and
    a `.get(...)` or `[...]` on `as_written()`. A reader reads the typed section (`manifest.dataset.source`);
    an export that copies a section whole copies its `.written()`."""
    def named(node: ast.AST) -> str:
        return (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else "").lower()

    def as_written(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "as_written"

    found = []
    for node in ast.walk(ast.parse(source)):
        call = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
        read = (call and node.func.attr == "section" and any(w in named(node.func.value) for w in ("run", "manifest"))
                ) or (call and node.func.attr == "get" and as_written(node.func.value)) or (
            isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and as_written(node.value))
        if read:
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_manifest_section_is_read_by_name_outside_the_contract() -> None:
    found = {path.relative_to(ROOT).as_posix(): _reads_section_by_name(path.read_text(encoding="utf-8"))
             for path in sorted(PACKAGE.rglob("*.py")) if not path.is_relative_to(PACKAGE / "contract")}
    assert {path: reads for path, reads in found.items() if reads} == {}


def test_the_section_by_name_rule_sees_each_read() -> None:
    source = ("dataset = run.section('dataset')\n"
              "name = self.manifest.section('config').get('model')\n"
              "invocations = run.manifest.as_written().get('invocations')\n"
              "status = manifest.as_written()['status']\n"
              "with formatter.section('Commands'):\n    pass\n"
              "source = run.manifest.dataset.source\n"
              "copied = manifest.thinking.written()\n")
    assert sorted(hit.split(":")[0] for hit in _reads_section_by_name(source)) == ["1", "2", "3", "4"]


def test_the_manifest_rule_sees_a_direct_parse() -> None:
    direct = ("import json\nfrom pathlib import Path\n"
              "def recorded(run_dir):\n    return json.loads((Path(run_dir) / 'manifest.json').read_text())\n")
    by_name = ("import json\nMANIFEST_NAME = 'manifest.json'\n"
               "def recorded(run_dir):\n    with open(run_dir / MANIFEST_NAME) as handle:\n        return json.load(handle)\n")
    other = ("import json\ndef rows(path):\n    return [json.loads(line) for line in open(path)]\n"
             "def manifest(run_dir):\n    return load_manifest(run_dir / 'manifest.json')\n")
    assert _parses_manifest(direct) == ["recorded"]
    assert _parses_manifest(by_name) == ["recorded"]
    assert _parses_manifest(other) == []


# --- the architecture page matches the tree ------------------------------------------------------------------
PAGE = ROOT / "docs" / "architecture.md"
# Module paths the page names as history ("as they were then"), not as today's tree.
HISTORY = re.compile(r"Adding `--protocol` touched \(module paths as they were then\).*?\n\n", re.DOTALL)


def _named_paths(text: str) -> set[str]:
    rooms = "|".join(ROOMS)
    found = re.findall(rf"(?<![\w/.\-])((?:wtb_local/)?(?:{rooms})/[\w/]*\w\.py)", text)
    return {path.removeprefix("wtb_local/") for path in found}


def test_the_architecture_page_names_every_room_and_only_files_that_exist() -> None:
    text = HISTORY.sub("", PAGE.read_text(encoding="utf-8"))
    table = text[text.index("| room | holds | may import |"):]
    table = table[:table.index("\n\n")]
    rows = [line.split("|")[1:4] for line in table.splitlines()[2:]]
    assert sorted(room.strip().strip("`/") for room, _, _ in rows) == sorted(ROOMS)
    for room, _, allowed in rows:  # the "may import" column is the test's table
        name = room.strip().strip("`/")
        said = {word.strip() for word in allowed.split(",")}
        assert said == ({"every room"} if ROOMS[name] == set(ROOMS) - {name} else
                        {"nothing of `wtb_local`"} if not ROOMS[name] else set(ROOMS[name])), name
    missing = sorted(path for path in _named_paths(text) if not (PACKAGE / path).is_file())
    assert missing == [], "docs/architecture.md names files that are not in the tree"
