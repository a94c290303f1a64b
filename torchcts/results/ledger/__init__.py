"""The expectations ledger applied to records (apply.py), which entries name which cases (match.py),
what the controller adds to a record before appending it (annotate.py), and proposed entries
(proposals.py).
"""
