"""The planted-fault record and the op-hook installer, shared by the fault modules of the sim.

`faults.py` holds the registry (`FAULTS`) and the faults each existing suite exists to catch;
`faults_unlisted.py` holds the faults no existing case targets (found by input exploration).
Both build their entries from `Fault` and `on_op` here, so neither imports the other's hooks.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from torchcts.sim import tensor

Hook = Callable[[Any, tuple, dict, Callable[..., Any]], Any]


@dataclass(frozen=True)
class Fault:
    name: str
    description: str
    suite: str  # the suite that exists to catch this kind of bug
    level: int  # the level of the cases meant to catch it
    catches: tuple[str, ...]  # case-id globs of the cases meant to catch it
    install: Callable[[], None]
    dtype: str | None = None  # narrows the focused selection when the bug is one dtype's
    op: str | None = None  # narrows it to one op (`--op`), for the per-op OpInfo suite
    # selftest's per-case limit for this fault's run when longer than its default (the first
    # torch.compile in a worker imports dynamo: tens of seconds on a loaded machine)
    case_timeout: float | None = None
    # True: no existing case targets this bug's class and OpInfo's samples miss it
    # (tests/sim/test_sim_faults_unlisted.py); `suite` is the input exploration meant to find it,
    # and selftest lists the fault "awaiting exploration" while that suite is not in the build
    unlisted: bool = False
    # N: the bug shows once in many calls (sim/faults_flaky.py), so its catching run is the plain
    # `--op` run repeated N times (`run --repeat N`), which records the case `flaky`; None: one run
    repeat: int | None = None
    # the input axis (an exploration axis of cases/explore/, or the transfers suite) whose case alone
    # catches this fault in a plain `--op` run (faults_axes.py, tests/explore/test_axis_faults.py); None: none
    axis: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "suite": self.suite, "level": self.level,
                "catches": list(self.catches), "dtype": self.dtype, "op": self.op, "selection": self.selection(),
                "case_timeout": self.case_timeout, "unlisted": self.unlisted, "repeat": self.repeat,
                "axis": self.axis}

    def selection(self) -> list[str]:
        """`torchcts run` flags of the focused selection: the catching suite at its level. An
        unlisted or axis fault's is the plain `--op` run a user types (the sim's default level and depth),
        a fault wrong only sometimes the same run with `--repeat N`."""
        if (self.unlisted or self.axis or self.repeat) and self.op:  # wrong only sometimes: each case repeated
            return ["--op", self.op, *(["--repeat", str(self.repeat)] if self.repeat else [])]
        args = ["--suite", self.suite, "--level-exact", str(self.level)]
        args += ["--dtype", self.dtype] if self.dtype else []
        return [*args, "--op", self.op] if self.op else args


def on_op(*packets: str) -> Callable[[Hook], Callable[[], None]]:
    """Make an installer that chains `hook` in front of the named ops' kernels."""

    def wrap(hook: Hook) -> Callable[[], None]:
        def install() -> None:
            for packet in packets:
                prev = tensor.OP_HOOKS.get(packet)
                if prev is None:
                    tensor.OP_HOOKS[packet] = hook
                else:
                    tensor.OP_HOOKS[packet] = (
                        lambda f, a, k, call, _p=prev: hook(f, a, k, lambda *a2, **k2: _p(f, a2, k2, call))
                    )

        return install

    return wrap
