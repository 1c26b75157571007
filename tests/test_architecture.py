"""The layers stay one-way (lint-imports with .importlinter) and the package stays light to import."""

import ast
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "tvm_tensorgpt"


def test_import_contracts_hold():
    """Every contract in .importlinter is kept: no upward import, no model stack in the bottom layers."""
    lint = Path(sys.executable).with_name("lint-imports")
    proc = subprocess.run([str(lint)], cwd=ROOT, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    assert "0 broken" in proc.stdout and "ignore_imports" not in (ROOT / ".importlinter").read_text()


def test_import_does_not_load_the_model_stack():
    """Builder workers import the package: no transformers, peft or our network on import (torch
    itself comes with tvm_ffi when it is installed, so it is not what is checked)."""
    code = ("import sys, tvm_tensorgpt; print(','.join(m for m in ('transformers', 'peft', 'tvm_tensorgpt.model', "
            "'tvm_tensorgpt.generators.model', 'tvm_tensorgpt.train') if m in sys.modules))")  # fmt: skip
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert proc.stdout.strip() == ""


def _function_level_imports(path: Path) -> list[tuple[int, str]]:
    """(line, source) of every import of this package inside a function of ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node in ast.walk(func):
            ours = isinstance(node, ast.ImportFrom) and (node.level > 0 or (node.module or "").startswith("tvm_tensorgpt"))
            if ours:
                found.append((node.lineno, lines[node.lineno - 1]))
    return found


def _explained(lines: list[str], lineno: int) -> bool:
    """A comment on the import's line, in its block of imports, or just above the block."""
    index = lineno - 1
    while index > 0 and (lines[index - 1].strip().startswith(("from ", "import ")) or not lines[index - 1].strip()):
        index -= 1
    block = lines[index : lineno]
    return any("#" in line for line in block) or (index > 0 and lines[index - 1].strip().startswith("#"))


def test_imports_inside_functions_say_why():
    """An import of our own code inside a function is there for start-up cost (torch, ...), never to
    dodge a circle: it carries a comment saying why."""
    unexplained = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for lineno, source in _function_level_imports(path):
            if not _explained(lines, lineno):
                unexplained.append(f"{path.relative_to(ROOT)}:{lineno}: {source.strip()}")
    assert not unexplained, "\n".join(unexplained)
