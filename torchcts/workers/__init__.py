"""Process supervision: the processes that run cases, and what their deaths mean (docs/architecture.md).

Isolation of xdist workers (`isolation.py`: their logs, the timeout watchdog, a dead worker's
record), the controller's worker-death policy (`deaths.py`), cases in forked children after a crash
(`case_process.py`, their messages `case_messages.py`, the outcome they send `outcome.py`), the
device canary (`canary.py`), the crash budget (`crash_budget.py`), crash attribution
(`attribution.py`), warm workers and the run's crash server (`warm.py`, `crash_server.py`, the fork
server `zygote/`). Below the engine: what runs a case is handed in (engine/one_case.py: run_one),
never imported.
"""
