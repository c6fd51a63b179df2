"""The shape of the code: no import cycle among the project's modules (imports at
run time, module level or inside functions; ``if TYPE_CHECKING:`` blocks are type hints,
not imports), ``problems`` imports no solver adapter (kinds name their reference solver by
``module:Class`` spec), and the arrows of ARCHITECTURE.md hold (``solvers`` imports nothing
of ``problems`` or ``bench``; ``problems`` nothing of ``bench``)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bench", "solvers", "problems")


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules ``name`` imports at run time."""
    tree = ast.parse(path.read_text())
    hints = {id(node) for block in ast.walk(tree) if isinstance(block, ast.If)
             and getattr(block.test, "id", getattr(block.test, "attr", "")) == "TYPE_CHECKING"
             for node in ast.walk(block)}
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(tree):
        if id(node) in hints:
            continue
        targets = []
        if isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else (node.module or "")
            targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
        elif isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
                break
    return found


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle():
    modules = _modules()
    edges = {name: _imports(name, path, modules) for name, path in modules.items()}
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_arrows_point_down_and_no_kind_imports_an_adapter():
    modules = _modules()
    for name, path in modules.items():
        imported = _imports(name, path, modules)
        if name.startswith("solvers"):
            assert not {m for m in imported if m.startswith(("problems", "bench"))}, name
        if name.startswith("problems"):
            assert not {m for m in imported if m.startswith("bench")}, name
            adapters = {m for m in imported if m.startswith("solvers.") and m.endswith("_")}
            assert not adapters, f"{name} imports {adapters}"


def _commands(tree: ast.Module) -> list[ast.FunctionDef]:
    """The functions of bench/cli.py that typer registers as commands."""
    def is_command(decorator) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return isinstance(target, ast.Attribute) and target.attr == "command"
    return [node for node in tree.body if isinstance(node, ast.FunctionDef) and any(map(is_command, node.decorator_list))]


def test_the_cli_parses_calls_and_prints():
    """Every command's body (after its docstring) is at most 40 lines; the CLI imports no
    study at module level, and the run lifecycle (run.json, grid.toml, latest, the lock) is
    bench.engine.run's: the CLI never writes those itself."""
    source = (ROOT / "bench" / "cli.py").read_text()
    tree = ast.parse(source)
    commands = _commands(tree)
    assert {c.name for c in commands} >= {"run", "report_cmd", "publish_cmd", "recommend_cmd", "compare_cmd"}
    for command in commands:
        body = command.body[1:] if isinstance(command.body[0], ast.Expr) else command.body
        assert command.end_lineno - body[0].lineno + 1 <= 40, command.name
    top = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert not [n for n in top if isinstance(n, ast.ImportFrom) and (n.module or "").startswith("bench.studies")]
    for call in ("write_manifest", "point_latest", "run_lock", "move_batches", "open_run_dir"):
        assert f"rundir.{call}(" not in source, call


def test_every_module_says_what_it_is_in_at_most_16_lines():
    """A module docstring says what the module is and its contract, briefly; the long form
    of a contract (frames, verification rules, figures) lives in docs/. Every module of the
    product has one."""
    long, missing = [], []
    for name, path in _modules().items():
        doc = ast.get_docstring(ast.parse(path.read_text()), clean=False)
        if doc is None:
            if path.name != "__init__.py" or path.read_text().strip():
                missing.append(name)
        elif len(doc.strip().splitlines()) > 16:
            long.append(f"{name}: {len(doc.strip().splitlines())} lines")
    assert long == [] and missing == []
