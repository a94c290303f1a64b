"""OpInfo cases that take over 30 s on a 2-core CPU, and why (issue 21: none without a reason).

`python bench/bench.py --full` lists the cases of a complete level-8 run over 30 s with the reason
given here, or says that none is recorded. Measured 2026-12-01 on the quiet 2-core machine
(PyTorch 2.13.0+cpu, one thread per worker).
"""

from __future__ import annotations

SLOW_CASES: dict[str, str] = {
    "opinfo/grid_sampler_3d/float16/backward": (
        "64.5 CPU-s: 30 OpInfo samples (3 padding modes x 2 align_corners x 5 shapes), the largest a "
        "20x21x22x23x24 input (5.1M elements); PyTorch's CPU grid_sampler_3d_backward takes 8x longer "
        "in float16 than in float32 (8.1 s: no fast reduced-precision path), and on CPU the case runs "
        "it twice, once as the reference and once as the device under test (on an accelerator only "
        "the reference half runs on the CPU). Every sample is kept: the large shapes are the ones "
        "that cross tile and vector boundaries."),
}
