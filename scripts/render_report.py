#!/usr/bin/env python3
"""Render a run's report.html in headless Chromium: a screenshot, the DOM after scripts ran, and
the page's console messages.

    python3 scripts/render_report.py results/latest [--out shot.png]

RUN is a run folder, `results/latest` (the link or the one-line file), a run name under
results/, or a report.html. Checks the page renders offline in a real browser (network disabled):
the screenshot is written, the page's script ran (it sets `data-report-ready` on <body>) and the
page logged nothing to the console (no uncaught exception, no console.error). Prints what the
browser saw; exit 0 when all hold, 1 when one does not, 2 without Chromium or a run. Needs
`chromium` (Debian: apt-get install -y chromium).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--proxy-server=127.0.0.1:9",
         "--proxy-bypass-list=<-loopback>")
READY = 'data-report-ready="1"'
# With --enable-logging=stderr, every console message of a page is one `...:CONSOLE...] "text", source: URL (line)`.
_CONSOLE = re.compile(r":CONSOLE[^\]]*\]\s*(.*)")


def find_browser() -> str | None:
    return next((b for b in map(shutil.which, BROWSERS) if b), None)


def _chrome(browser: str, profile: str, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [browser, *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


@dataclass
class Rendered:
    dom: str
    console: list[str]  # the page's console messages (errors, uncaught exceptions, logs)

    @property
    def script_ran(self) -> bool:
        return READY in self.dom


def render(html: Path, png: Path, browser: str, size: str = "1400,1800") -> Rendered:
    """One browser run: writes the screenshot; returns the DOM after the page's scripts ran and
    what the page wrote to the console."""
    with tempfile.TemporaryDirectory() as profile:
        res = _chrome(browser, profile, "--enable-logging=stderr", "--v=0", f"--screenshot={png.resolve()}",
                      f"--window-size={size}", "--dump-dom", html.resolve().as_uri())
    return Rendered(res.stdout, [m.group(1) for m in map(_CONSOLE.search, res.stderr.splitlines()) if m])


def report_html(ref: str) -> Path:
    """The report.html of a run given as the commands take it (a folder, results/latest, a name)."""
    if ref.endswith(".html"):
        return Path(ref)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from torchcts.results.records.rundir import resolve_run

    return resolve_run(ref) / "report.html"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", help="run folder, results/latest, run name, or a report.html")
    p.add_argument("--out", type=Path, default=None, help="screenshot path (default: report.png beside it)")
    args = p.parse_args()
    try:
        html = report_html(args.run)
    except Exception as exc:  # noqa: BLE001 - the one-line error of resolve_run (UsageError)
        print(f"render_report: {exc}", file=sys.stderr)
        return 2
    browser = find_browser()
    if browser is None:
        print("no chromium found: apt-get install -y chromium", file=sys.stderr)
        return 2
    if not html.is_file():
        print(f"render_report: no {html}: rebuild it with `torchcts report {args.run}`", file=sys.stderr)
        return 2
    png = args.out or html.with_suffix(".png")
    page = render(html, png, browser)
    shown = re.search(r"id=\"shown\">([^<]*)<", page.dom)
    print(f"screenshot: {png} ({png.stat().st_size if png.exists() else 0} bytes)")
    rows, clusters = page.dom.count("<tr data-status="), page.dom.count('class="cluster"')
    print(f"script ran: {'yes' if page.script_ran else 'NO'}; failure rows: {rows}; clusters: {clusters}; "
          f"filter says: {shown.group(1) if shown else '-'}")
    print(f"console messages: {len(page.console)}")
    for line in page.console:
        print(f"  {line}")
    return 0 if png.exists() and page.script_ran and not page.console else 1


if __name__ == "__main__":
    sys.exit(main())
