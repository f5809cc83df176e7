#!/usr/bin/env python3
"""Shape limits: every tracked source file at most 400 lines; every Python function at most 60
lines as Python's own parser spans it; every shell function at most 60 lines from its `name() {`
to the `}` at the same indentation; every C++ function body at most 60 lines, counted as
clang-tidy's readability-function-size counts it (cpp_functions.py; gtest's TEST bodies are
exempt, as they are from clang-tidy). Prints one line per violation and exits 1 if there is
any."""
import ast
import pathlib
import re
import subprocess
import sys

import cpp_functions

MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 60
SOURCE_SUFFIXES = {".cc", ".h", ".cu", ".cuh", ".py", ".sh"}
CPP_SUFFIXES = {".cc", ".h", ".cu", ".cuh"}


def tracked_sources(root):
    out = subprocess.run(["git", "-C", str(root), "ls-files", "--cached", "--others",
                          "--exclude-standard"], check=True, capture_output=True, text=True)
    for name in out.stdout.splitlines():
        path = root / name
        if path.suffix in SOURCE_SUFFIXES and path.is_file():
            yield path


def python_functions(path, text):
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            yield node.name, node.lineno, node.end_lineno - first + 1


SHELL_FUNCTION = re.compile(r"^(\s*)(?:function\s+)?([A-Za-z_][\w-]*)\s*\(\)\s*\{\s*$")


def shell_functions(text):
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = SHELL_FUNCTION.match(line)
        if not m:
            continue
        closing = m.group(1) + "}"
        end = next((j for j in range(i + 1, len(lines)) if lines[j].rstrip() == closing), i)
        yield m.group(2), i + 1, end - i + 1


def check(root):
    problems = []
    for path in sorted(tracked_sources(root)):
        rel = path.relative_to(root)
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if lines > MAX_FILE_LINES:
            problems.append(f"{rel}: {lines} lines (at most {MAX_FILE_LINES})")
        functions = []
        if path.suffix == ".py":
            functions = python_functions(path, text)
        elif path.suffix == ".sh":
            functions = shell_functions(text)
        elif path.suffix in CPP_SUFFIXES:
            functions = ((n, line, length) for n, line, length in cpp_functions.functions(text)
                         if not re.fullmatch(r"[A-Z_0-9]+", n.split("::")[-1]))
        for name, line, length in functions:
            if length > MAX_FUNCTION_LINES:
                problems.append(f"{rel}:{line}: function '{name}' is {length} lines "
                                f"(at most {MAX_FUNCTION_LINES})")
    return problems


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    problems = check(root)
    for p in problems:
        print(f"check-shape: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
