"""A record's life after its case ran: its status decided (decide.py), run.json typed (outcome.py), the
run folder and its streamed writers (rundir.py, jsonl.py, plan.py), closing and merging runs
(finalize.py, artifacts.py, merge.py), and the one scrubber of what is written (scrub.py).
"""
