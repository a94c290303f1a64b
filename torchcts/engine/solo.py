"""One case alone in a fresh process: `python -m torchcts.engine.solo RUN_DIR CASE_ID OUT [CORPUS]`.

Why: crash attribution (workers/attribution.py) must know whether a case crashes with nothing run
before it in its process. This process runs that one case as a worker would (engine/one_case.py:
run_one, the run's device, manifest and selection from run.json), then lives GRACE_S longer, so
work the case left behind (a driver thread's abort after the op returned, as on PoCL) lands here,
not in another case. Its outcome goes to OUT as CaseOutcome JSON; a crash leaves no OUT, only the
exit status and fd 2, where faulthandler and C code write (the parent keeps both).
"""

from __future__ import annotations

import faulthandler
import json
import os
import sys
import time
from pathlib import Path

GRACE_S = 1.5  # a driver's deferred abort lands within this of the case's return (PoCL: milliseconds)


def main(argv: list[str]) -> int:
    run_dir, case_id, out = Path(argv[0]), argv[1], Path(argv[2])
    corpus = argv[3] if len(argv) > 3 else None
    faulthandler.enable(file=sys.stderr, all_threads=False)
    from torchcts.engine.one_case import run_one
    from torchcts.engine.plugin import RunState

    state = RunState(run_dir)
    state.worker = "solo"
    case = state.plan()[case_id]
    try:
        state.context_parts()  # the backend, as a worker imports it before its first case
    except Exception:  # noqa: BLE001, S110 - the case reports it as its error
        pass
    outcome = run_one(case, state, corpus)
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    time.sleep(GRACE_S)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(outcome.to_json()), encoding="utf-8")
    os.replace(tmp, out)
    return 0


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    os._exit(code)  # no exit handlers or destructors: a crash at interpreter exit is not the case's
