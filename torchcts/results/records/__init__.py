"""A record's life after its case ran: its status decided (decide.py), the run folder and its streamed
writers (rundir.py: read_run, the one reader of run.json; jsonl.py, plan.py), closing and merging
runs (finalize.py, artifacts.py, merge.py), and the one scrubber of what is written (scrub.py).
run.json's type is model/run.py: Run.
"""
