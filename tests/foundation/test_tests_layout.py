"""The project's tests sit in folders by area, named by what they test, and share code only
through tests/helpers (issue 52 item 5): a test module importing another test module, or conftest,
for a helper makes that module's tests run wherever the helper is used, and its home a guess."""

from __future__ import annotations

import ast

from helpers.paths import TESTS


def _test_modules():
    return sorted(p for p in TESTS.rglob("test_*.py") if "helpers" not in p.parts)


def test_every_test_module_sits_in_an_area_folder():
    assert len(_test_modules()) > 100
    assert [p.name for p in TESTS.glob("test_*.py")] == []  # none at the top
    names = [p.name for p in _test_modules()]
    assert len(names) == len(set(names))  # pytest imports a module of the same name once


def _imports_of_tests(source: str) -> list[str]:
    """The modules `source` imports that are a test module, conftest, or the tests package."""
    found = []
    for node in ast.walk(ast.parse(source)):
        names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
            [a.name for a in node.names] if isinstance(node, ast.Import) else []
        found += [n for n in names if n.split(".")[0].startswith("test_") or n.split(".")[0] in ("conftest", "tests")]
    return found


def test_tests_share_code_only_through_helpers():
    shared = {str(p.relative_to(TESTS)): _imports_of_tests(p.read_text(encoding="utf-8")) for p in _test_modules()}
    assert {k: v for k, v in shared.items() if v} == {}
    # the check itself sees each way a helper was borrowed before (lazily too)
    borrowed = "from conftest import run_cli\ndef f():\n    from test_verdict import _state\n    import tests.conftest\n"
    assert _imports_of_tests(borrowed) == ["conftest", "test_verdict", "tests.conftest"]
