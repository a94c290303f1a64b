"""The sim's variables a run had, so that the commands and scripts reproducing its cases set them too.

The simulated device reads `TORCHCTS_SIM_FAULT` (planted faults) and `TORCHCTS_SIM_DECOMP` when
`torchcts.sim` is imported (sim/faults.py, sim/decomp.py). A repro of a run with a planted fault
that does not set the same variables passes, and says nothing of why. So run.json records them
(`sim_env`, written at open by engine/execute.py for a run whose backend is the sim), each repro
line starts with them (`TORCHCTS_SIM_FAULT=abs_zero_dim torchcts run ...`, results/repro/commands.py:
`record_repro`) and a standalone script sets them before importing the backend (results/repro/script.py).

run.json is untrusted (a downloaded run folder): only these names are read back, and only values
made of names and commas, so nothing read here can reach a shell or a script as code.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

from torchcts import settings
from torchcts.model.run import Run

SIM_MODULE = "torchcts.sim"  # the backend_import of the sim's manifests (and its submodules)
FAULT, DECOMP = settings.env_name("sim_fault"), settings.env_name("sim_decomp")
_VALUE = re.compile(r"[A-Za-z0-9_.,-]{1,400}")


def recorded(backend_import: Any) -> dict[str, str]:
    """What run.json's `sim_env` holds for a run importing `backend_import`: the sim's variables
    set away from their defaults; empty for any other backend."""
    if not isinstance(backend_import, str) or not (backend_import == SIM_MODULE
                                                   or backend_import.startswith(SIM_MODULE + ".")):
        return {}
    now = settings.current()
    env = {FAULT: ",".join(now.sim_fault)} if now.sim_fault else {}
    if now.sim_decomp != settings.SIM_DECOMP_MODES[0]:
        env[DECOMP] = now.sim_decomp
    return env


def of_run(run: Run) -> dict[str, str]:
    """run.json's `sim_env`, validated: the sim's names only, values of names and commas."""
    value = run.sim_env
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if k in (FAULT, DECOMP) and isinstance(v, str) and _VALUE.fullmatch(v)}


def shell_prefix(run: Run) -> str:
    """`NAME=value ` for each of the run's sim variables (quoted for the shell), '' for none."""
    return "".join(f"{name}={shlex.quote(value)} " for name, value in sorted(of_run(run).items()))
