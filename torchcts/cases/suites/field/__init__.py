"""The `field` suite (issue 50): one case per real report of a backend bug, replayed.

Each module of this package holds the cases of one group of classes of docs/bug-classes.md
(values.py: V*, layout.py: L*, ...), with its own `SUITE = CaseSet("field")` and `cases = SUITE.cases`.
A case is named `<class>/<owner>-<repo>-<number>` and carries `cite=` (the report's URL), so its id
reads `field/V5/pytorch-pytorch-12345/float32` and its record and the reports link the report.

`cases()` gathers every module of the package, sorted by name, so a new module needs no edit
elsewhere (the registry names only this package). A module without `cases` is a mistake, not a
module to skip silently: it would drop its cases from every run.
"""

from __future__ import annotations

import importlib
import pkgutil

from torchcts.cases.api import Case

__all__ = ["cases", "modules"]


def modules() -> list[str]:
    """The package's case modules, by full name, sorted (private `_name` modules are helpers)."""
    return sorted(f"{__name__}.{m.name}" for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def cases() -> list[Case]:
    out: list[Case] = []
    for name in modules():
        module = importlib.import_module(name)
        build = getattr(module, "cases", None)
        if not callable(build):
            raise TypeError(f"{name} is in the field suite's package but defines no cases(): add "
                            "`SUITE = CaseSet(\"field\")` and `cases = SUITE.cases`, or rename it `_{name}`")
        out.extend(build())
    return out
