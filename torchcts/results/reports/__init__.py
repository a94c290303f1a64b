"""Everything a person reads of a run, rebuilt from run.json and cases.jsonl: the scorecard,
summary.md, report.html and its sections, junit.xml, compare, the upgrade question, skips and
repeats.
"""
