"""What the field suite's modules share (a private module: `cases()` skips it)."""

from __future__ import annotations

GH = "https://github.com/"  # every cite= is a report's URL
NAN_REQ = ("inference", "ieee754")  # a case whose inputs hold NaN or infinities
