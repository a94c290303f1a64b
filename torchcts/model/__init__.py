"""The data model (docs/architecture.md, layer 2): what a case, a device, a selection, the claims, a
status, a case's record and a run (run.json) are, as typed records with their serialisers, and
nothing that runs them.

Every other layer reads and writes these; this package imports nothing of TorchCTS but itself and
two leaves of the bottom layer: `errors.first_line` (a record's internal-error line) and
`untrusted` (the one bounded parser of what a file or a worker hands in). So any layer, the
manifest's included, may hold a record, and a type has one home whichever layer fills it in.
"""
