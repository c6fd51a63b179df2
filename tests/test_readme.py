"""Docs: README is a short manual whose tables say what the code does. The
adapter table is checked against the registry's capabilities, the family table against the
family registry, every link to a file resolves, every page of docs/ is linked from README,
and docs/testing.md's layout names every module."""

from __future__ import annotations

import re
from pathlib import Path

import problems
import solvers

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _table(after: str) -> list[list[str]]:
    """The rows of the first Markdown table after the heading ``after`` (cells stripped of `)."""
    text = README.split(after, 1)[1]
    rows = [line for line in text.splitlines() if line.startswith("|")]
    block = []
    for line in text.splitlines()[text.splitlines().index(rows[0]):]:
        if not line.startswith("|"):
            break
        block.append([cell.strip().strip("`") for cell in line.strip("|").split("|")])
    return block[2:]


def _adapter_row(name: str) -> list[str]:
    caps = solvers.adapter_class(name).CAPABILITIES
    kinds = "/".join(k.upper() for k in ("lp", "qp", "socp") if getattr(caps, k))
    return [name, kinds, "jit(vmap)" if caps.batched else "loop", ", ".join(sorted(caps.dtypes)),
            ", ".join(sorted(caps.devices))]


def test_the_adapter_table_is_the_registry():
    rows = _table("## Solver adapters")
    names = [name for name in solvers.adapters() if not name.startswith("fake-")]
    assert sorted(r[0] for r in rows) == sorted(names)
    for row in rows:
        assert row == _adapter_row(row[0]), row[0]


def test_the_family_table_is_the_registry():
    rows = _table("## Problem families")
    families = problems.families()
    assert sorted(r[0] for r in rows) == sorted(families)
    for row in rows:
        assert [k.strip().strip("`") for k in row[1].split(",")] == list(families[row[0]].kinds), row[0]


def test_readme_is_a_short_manual_and_its_links_resolve():
    assert len(README.encode()) <= 20_000
    assert README.startswith("# contactbench\n\n```\nmake run ") and "\nmake test " in README.split("```")[1]
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README)
    for link in links:
        if not link.startswith(("http", "file:")):
            assert (ROOT / link).exists(), link
    linked = {Path(link).name for link in links}
    for page in (ROOT / "docs").glob("*.md"):
        assert page.name in linked, f"docs/{page.name} is linked from nowhere in README"


def test_every_link_in_the_docs_resolves():
    pages = sorted((ROOT / "docs").rglob("*.md"))
    for page in pages:
        for link in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text()):
            if not link.startswith(("http", "file:", "mailto:")):
                assert (page.parent / link).resolve().exists(), f"{page.relative_to(ROOT)}: {link}"


#: words of a work log, not of a manual: numbered issues and sessions, notebooks, "this
#: project's VM" (a figure names its machine by what it is: "a 2-core CPU")
DIARY = re.compile(r"issue [0-9]+|issues? #[0-9]+|\b(sessions?|notebooks?)\b|this project's (VM|machine|venv)|"
                   r"development (VM|machine)|docs/history|this (2-core )?VM", re.IGNORECASE)


def test_the_docs_and_the_code_describe_the_present():
    """README, docs/, the product's code and its tests hold no work log: history lives in git
    and in the issues' notes."""
    files = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    files += [p for package in ("bench", "solvers", "problems", "tests") for p in sorted((ROOT / package).rglob("*"))
              if p.suffix in (".py", ".j2") and p.name != "test_readme.py"]
    found = []
    for path in files:
        # a phrase broken over lines (of a comment: its "#" too) is read as one line
        text = re.sub(r"\n\s*(#:? ?)?", " ", path.read_text())
        found += [f"{path.relative_to(ROOT)}: ...{text[max(m.start() - 40, 0):m.end() + 20]}..."
                  for m in DIARY.finditer(text) if not re.match(r"session leader|session\"", text[m.start():m.end() + 8])]
    assert not found, "\n".join(found)
    assert not (ROOT / "docs" / "history").exists()


def test_the_layout_names_every_module():
    layout = (ROOT / "docs" / "testing.md").read_text().split("## Layout", 1)[1]
    for package in ("bench", "solvers", "problems"):
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name == "__init__.py" or "asv_benchmarks" in path.parts:
                continue
            stem = path.stem.rstrip("_") if package == "solvers" and path.stem.endswith("_") else path.stem
            assert stem in layout, f"{package}/{path.name} is missing from docs/testing.md's layout"
