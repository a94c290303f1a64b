"""The one quoting layer per output format: data from records never becomes code or markup.

Case ids, run-folder names, messages and tracebacks come from files anyone can craft (a plan.jsonl,
a downloaded results folder). Every generator embeds them only through these functions:

- Python source: values as literals (`py_literal`, repr), free text in a docstring or comment
  through `py_docstring` / `py_comment` (no quote run, backslash or line break survives);
- Markdown: `md_code` (inline code span) and `md_text` (one line, markup characters escaped);
- HTML: `html_text` (escaped, control characters removed);
- a terminal: `terminal` (no escape sequences, no carriage returns or other control characters);
- TOML and Python string values in files a user pastes from (`quoted_string`: escapes for every
  control and invisible character).

In every medium, invisible and direction-changing Unicode (zero-width characters, bidirectional
overrides and isolates, the BOM, tag characters) is removed: it would make a shown id, message or
command read differently from what it is (issue 31).
"""

from __future__ import annotations

import html
import re
from typing import Any, TextIO

from torchcts.results.records.scrub import scrub
from torchcts.untrusted import invisible

# C0 controls except tab and newline, DEL, C1 controls (ESC [ ... sequences start with \x1b or \x9b).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# A whole ANSI escape sequence (CSI, OSC ... BEL/ST, or a two-character escape), removed as one.
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]")
# Invisible and direction-changing characters (Unicode format controls): bidi embeddings, overrides
# and isolates, zero-width space/joiners, word joiner and invisible operators, BOM, soft hyphen,
# interlinear annotations and tag characters.
_INVISIBLE = re.compile("[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e"
                        "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U000e0000-\U000e007f]")
# Line and paragraph separators some viewers (and Python's str.splitlines) treat as line breaks.
_SEPARATORS = re.compile("[\u2028\u2029\x85]")
# Every line break a terminal or viewer honours, shown escaped inside a one-line field (`one_field`).
_BREAKS = re.compile("[\n\r\u2028\u2029\x85]")
_BREAK_ESCAPES = {"\n": "\\n", "\r": "\\r", "\u2028": "\\u2028", "\u2029": "\\u2029", "\x85": "\\x85"}


def visible(text: str) -> str:
    """`text` without invisible and direction-changing characters (the listed ones, then by category:
    new format controls in a later Unicode version are removed without a change here)."""
    s = _INVISIBLE.sub("", text)
    return s if s.isascii() else "".join(ch for ch in s if ch < "\x80" or not invisible(ch))


def strip_controls(text: Any, keep_newlines: bool = True) -> str:
    """`text` without escape sequences or control characters (tabs kept; newlines kept if asked)."""
    s = _ANSI.sub("", "" if text is None else str(text))
    s = _SEPARATORS.sub("\n" if keep_newlines else " ", s.replace("\r\n", "\n"))
    s = visible(_CONTROL.sub("", s))
    return s if keep_newlines else s.replace("\n", " ")


def one_line(text: Any) -> str:
    """Printable text on a single line."""
    return strip_controls(text, keep_newlines=False)


def one_field(text: Any) -> str:
    """A value shown inside one line of terminal output (an id, a message, a cluster title): its
    line breaks escaped (`\\n`, `\\r`, `\\u2028`), so a crafted record cannot print a line of its own
    (`repro: curl ... | sh` above the real one); control and invisible characters removed."""
    s = _ANSI.sub("", "" if text is None else str(text))
    return strip_controls(_BREAKS.sub(lambda m: _BREAK_ESCAPES[m.group()], s), keep_newlines=False)


def terminal(text: Any) -> str:
    """Text safe to print on a terminal: no escape sequences or control characters, newlines kept."""
    return strip_controls(text)


def py_literal(value: Any) -> str:
    """A Python literal for a str, number, bool, None, or list/dict of them (repr round-trips)."""
    return repr(value)


def py_docstring(text: Any) -> str:
    """Free text for the inside of a triple-double-quoted docstring: it cannot end the string,
    start an escape or hide a line break."""
    s = strip_controls(text).replace("\\", "\\\\").replace('"', "'")
    return s


def py_comment(text: Any) -> str:
    """Free text for a `# ...` comment: one line, so nothing after it becomes code."""
    return one_line(text)


def md_code(text: Any, cell: bool = False) -> str:
    """An inline Markdown code span holding `text` verbatim (one line); `cell`: inside a table row,
    where a `|` would end the cell even in a code span (GitHub's tables), so it is escaped."""
    s = one_line(text)
    if cell:
        s = s.replace("|", "\\|")
    fence = "`"
    while fence in s:
        fence += "`"
    pad = " " if s.startswith("`") or s.endswith("`") else ""
    return f"{fence}{pad}{s}{pad}{fence}"


# What can start code, a link, an image, raw HTML, a table cell, emphasis, strike-through, an
# entity, or at a line's start a heading, a list item or a quote.
_MD_SPECIAL = re.compile(r"([\\`\[\]<>|*~&])")
_MD_LINE_START = re.compile(r"^(\s*)([#>+=-]|\d+[.)])")


def md_text(text: Any, line_start: bool = False) -> str:
    """Plain text in a Markdown line or table cell: one line, markup and raw HTML escaped. A list or
    heading marker (`2.`, `#`, `-`) is escaped only where the text starts a line (`line_start`):
    inside a line, `torch 2.13.0` is plain text and a backslash there would show."""
    out = _MD_SPECIAL.sub(r"\\\1", one_line(text))
    return _MD_LINE_START.sub(lambda m: m.group(1) + "\\" + m.group(2), out) if line_start else out


def quoted_string(text: Any) -> str:
    """A double-quoted string that TOML and Python read back as `text`, with the invisible and
    direction-changing characters removed and every control character escaped (\\uXXXX works in both)."""
    s = visible(_SEPARATORS.sub(" ", str(text)))
    out = []
    for ch in s:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch < " " or "\x7f" <= ch <= "\x9f":
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def html_text(text: Any) -> str:
    """Text for HTML element content or a quoted attribute."""
    return html.escape(strip_controls(text), quote=True)


class TerminalOut:
    """A text stream that passes everything through the scrubber and `terminal` (for print(file=...)).

    `restore` (scrubbed -> as given) puts back the paths the user typed on this command line (its
    `--manifest`, the run folder), so a printed repro line runs as printed; nothing else comes back."""

    def __init__(self, stream: TextIO, restore: dict[str, str] | None = None) -> None:
        self.stream = stream
        self.restore = restore or {}

    def write(self, text: str) -> int:
        text = scrub(text)
        for scrubbed, raw in self.restore.items():
            text = text.replace(scrubbed, raw)
        return self.stream.write(terminal(text))

    def flush(self) -> None:
        self.stream.flush()
