"""The generated suite: one case per remaining dispatcher surface, built from its schema.

`build.py` chooses the surfaces (those no other suite names, minus the reviewed exclusions) and
how each is checked; `synth.py` makes inputs from argument types; `run.py` runs a case against
CPU. docs/coverage.md ("Generated cases") documents the generator, the statuses and the costs.
"""

from __future__ import annotations

from torchcts.model.case import Case


def cases() -> list[Case]:
    from torchcts.cases.registry import SUITES, suite_cases
    from torchcts.cases.schema.build import SUITE, plan

    others = [c for name, s in SUITES.items() if name != SUITE and s.module.startswith("torchcts.")
              for c in suite_cases(name)]
    return plan(others)[0]
