"""Op facts: the one registry of what is known about an op (issue 42 item 2, docs/oracles.md "Op facts").

Every per-op quirk the suites and oracles act on (exact results, constant references, property
oracles, truth and reference exclusions, exploration's exclusions and switch points) is a `Fact`
with its reason and source, in the module of its kind here, and is asked through `FACTS` with one
name resolver (`keys`): an OpInfo name, `name.variant` or an aten name all reach the same entry.
A newcomer adding an op's quirk adds one Fact.
"""

from __future__ import annotations

from torchcts.oracle.opfacts import constant, exact, explore, generated, normalization, reference, samples
from torchcts.oracle.opfacts.model import ALWAYS, Fact, When, is_aten, keys
from torchcts.oracle.opfacts.registry import KINDS, OpFacts

__all__ = ["ALWAYS", "FACTS", "KINDS", "Fact", "OpFacts", "When", "is_aten", "keys"]

FACTS = OpFacts((*exact.FACTS, *constant.FACTS, *reference.FACTS, *explore.FACTS, *samples.FACTS,
                  *normalization.FACTS, *generated.FACTS))
