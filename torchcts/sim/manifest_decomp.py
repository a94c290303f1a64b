# The preset manifest of the sim in decomposition mode (torchcts.sim.decomp): the sim's manifest,
# with every op that has a PyTorch decomposition running through it instead of the CPU kernel.
#   torchcts run --device sim --manifest <path of this file>
# Its ledger adds to the sim's the decompositions that differ from CPU's kernel for a reason a
# tolerance should not absorb; docs/sim.md gives the measured run.
from torchcts.sim.manifest import manifest as _sim

manifest = {
    **_sim,
    "backend_import": "torchcts.sim.decomp",
    "expectations": [
        *_sim["expectations"],
    ],
}
