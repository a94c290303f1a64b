"""The data model (docs/architecture.md, layer 2): what a case, a device, a selection, a status and a
case's record are, as typed records with their serialisers, and nothing that runs them (run.json's
one `Run` is still to come: `engine/spec.py: RunSpec` and `results/records/outcome.py: RunOutcome`).

Every other layer reads and writes these; this package imports nothing of TorchCTS but itself and
two leaves of the bottom layer: `errors.first_line` (a record's internal-error line) and
`untrusted` (the one bounded parser of what a file or a worker hands in). So any layer, the
manifest's included, may hold a record, and a type has one home whichever layer fills it in.
"""
