"""Argument-space exploration of OpInfo ops (issue 29; docs/exploration.md).

    switches.py  the switch points of an op's arguments: from its aten schema, a table of string
                 enums, and a hook for an op's own (`add_switch_points`)
    values.py    value classes injected into a sample's tensors (signed zeros, subnormals, halfway
                 values, ties, dtype extremes, NaN/Inf, index ends)
    generate.py  explored sample i of a case: a seeded variant of one of OpInfo's samples
    codec.py     samples to and from JSON (exact values), for records, the corpus and repro
    shrink.py    the bounded greedy shrinker of a failing sample
    corpus.py    the counterexample corpus: one JSON file per find, replayed first
    find.py      a find, handed by the failure to the case's rerun without the dispatch observer
    run.py       the runner of `opinfo/<op>/<dtype>/explore` cases
"""
