#!/usr/bin/env python3
"""Render a run's report.html in headless Chromium: a screenshot, and the DOM after scripts ran.

    python3 scripts/render_report.py results/<run> [--out shot.png]

Checks the page renders offline in a real browser (network disabled) and prints the totals and
row counts the browser saw. Needs `chromium` (Debian: apt-get install -y chromium).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")


def find_browser() -> str | None:
    return next((b for b in map(shutil.which, BROWSERS) if b), None)


def _chrome(browser: str, profile: str, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           f"--user-data-dir={profile}", "--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)


def render(html: Path, png: Path, browser: str) -> str:
    """Writes the screenshot; returns the DOM Chromium produced after running the page's scripts."""
    url = html.resolve().as_uri()
    with tempfile.TemporaryDirectory() as profile:
        _chrome(browser, profile, f"--screenshot={png}", "--window-size=1400,1800", url)
        dom = _chrome(browser, profile, "--dump-dom", url)
    return dom.stdout


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("run", type=Path, help="run folder or report.html")
    p.add_argument("--out", type=Path, default=None, help="screenshot path (default: report.png beside it)")
    args = p.parse_args()
    html = args.run / "report.html" if args.run.is_dir() else args.run
    browser = find_browser()
    if browser is None:
        print("no chromium found: apt-get install -y chromium", file=sys.stderr)
        return 2
    png = args.out or html.with_suffix(".png")
    dom = render(html, png, browser)
    shown = re.search(r"id=\"shown\">([^<]*)<", dom)
    rows = dom.count("<tr data-status=")
    print(f"screenshot: {png} ({png.stat().st_size if png.exists() else 0} bytes)")
    print(f"failure rows: {rows}; filter says: {shown.group(1) if shown else '?'}")
    return 0 if png.exists() and shown else 1


if __name__ == "__main__":
    sys.exit(main())
