"""What a refused command printed: one line, never a traceback."""

from __future__ import annotations


def sole_stderr_line(capsys) -> str:
    """The command's whole stderr: exactly one line, no traceback."""
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    assert "Traceback" not in err[0]
    return err[0]


def one_error_line(capsys, *names: str) -> str:
    """The command's stderr: exactly one `torchcts: error:` line naming each of `names`, no traceback."""
    err = capsys.readouterr().err
    assert "Traceback" not in err and "internal error" not in err, err
    lines = [ln for ln in err.splitlines() if ln.startswith("torchcts: error:")]
    assert len(lines) == 1, err
    for name in names:
        assert name in lines[0], (name, lines[0])
    return lines[0]
