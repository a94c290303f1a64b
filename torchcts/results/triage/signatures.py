"""Error signatures: what makes two failures "the same failure".

A signature is `<kind>: <normalised message>`, where numbers, shapes, hex addresses and quoted
names are replaced by placeholders, so the same root cause on different ops, shapes and dtypes
reads the same. The ledger compares signatures (a known failure that changes its error is news)
and triage groups failures by them.

Buckets are the coarse classes an entry may name instead of a pattern.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any

from torchcts.manifest.schema import BUCKETS  # bucket name -> what it covers (the ledger's words)
from torchcts.model.record import CaseRecord
from torchcts.oracle.mismatch import Mismatch

_MISSING_KERNEL = re.compile(r"Could not run '([\w:.]+)' with arguments from the '([\w]+)' backend")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"|`[^`]*`")
_SIZE = re.compile(r"torch\.Size\(\[[^\]]*\]\)")
_SHAPE = re.compile(r"[\[(]\s*-?\d+(?:\s*,\s*-?\d+)*\s*,?\s*[\])]")
_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?(?![\w])")
_SPACE = re.compile(r"\s+")
MAX_LEN = 200


def normalise_message(message: str) -> str:
    """The message with what varies between instances of one root cause replaced by placeholders."""
    text = message.strip().splitlines()[0] if message.strip() else ""
    text = _HEX.sub("<addr>", text)
    text = _QUOTED.sub("<name>", text)
    text = _SIZE.sub("<shape>", text)
    text = _SHAPE.sub("<shape>", text)
    text = _NUMBER.sub("<n>", text)
    return _SPACE.sub(" ", text).strip()[:MAX_LEN]


def missing_kernel(message: str) -> str | None:
    """The operator name of a dispatcher "Could not run" error, else None."""
    m = _MISSING_KERNEL.search(message or "")
    return m.group(1) if m else None


def _exception_and_text(record: CaseRecord) -> tuple[str, str]:
    message = str(record.message or "")
    exc = str(record.exception or "")
    if not exc:
        head, sep, _rest = message.partition(":")
        exc = head if sep and head.isidentifier() else "Error"
    prefix = f"{exc}:"
    text = message[len(prefix):] if message.startswith(prefix) else message
    return exc, text


def bucket_of(record: CaseRecord) -> str | None:
    """The bucket of a failing record, None for a record that did not fail."""
    status = record.status
    if status == "failed":
        return "mismatch"
    if status == "crashed":
        return "crash"
    if status == "timeout":
        return "timeout"
    if status == "error":
        return "missing_kernel" if missing_kernel(str(record.message or "")) else "error"
    return None


def signature_of(record: CaseRecord) -> str | None:
    """`mismatch: <what>`, `missing_kernel: aten::foo`, `crash`, `timeout` or `<Exception>: <pattern>`."""
    bucket = bucket_of(record)
    if bucket is None:
        return None
    if bucket == "mismatch":
        mismatch = Mismatch.from_json(record.mismatch)
        what = (mismatch.what if mismatch is not None else "") or record.message or ""
        return f"mismatch: {normalise_message(str(what))}"
    if bucket == "missing_kernel":
        return f"missing_kernel: {missing_kernel(record.message or '')}"
    if bucket in ("crash", "timeout"):
        return bucket
    return _exception_signature(record)


def entry_signature(spec: Any) -> str | None:
    """An entry's `signature` as one pattern string: a bucket, `Type: message pattern`, or None."""
    if spec is None:
        return None
    if isinstance(spec, dict):
        exc = spec.get("exception") or "*"
        return f"{exc}: {spec.get('message') or '*'}"
    return str(spec)


def _exception_signature(record: CaseRecord) -> str:
    exc, text = _exception_and_text(record)
    return f"{exc}: {normalise_message(text)}"


def signature_matches(pattern: str | None, record: CaseRecord) -> bool:
    """Whether a failing record has the signature an entry expects.

    A bucket name matches its bucket ("error" any raised exception); an exception type alone
    matches that type; otherwise the pattern is a glob over the record's signature (for a raised
    exception also over `Type: normalised message`), tried both as written and normalised, so a raw
    message copied from a log matches too.
    """
    sig = signature_of(record)
    if sig is None:
        return False
    if pattern is None:
        return True
    bucket = bucket_of(record)
    if pattern in BUCKETS:
        return pattern == bucket or (pattern == "error" and record.status == "error")
    if ":" not in pattern:
        exc, _ = _exception_and_text(record)
        return bucket in ("error", "missing_kernel") and fnmatch.fnmatchcase(exc, pattern)
    kind, _, text = pattern.partition(":")
    patterns = {pattern.strip(), f"{kind.strip()}: {normalise_message(text)}"}
    sigs = {sig, _exception_signature(record)} if bucket == "missing_kernel" else {sig}
    return any(fnmatch.fnmatchcase(s, p) for s in sigs for p in patterns)
