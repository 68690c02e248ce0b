"""Benchmark: how long a claims report takes to open in headless Chromium, and its size.

Opens the page five times in one browser (the first open pays the browser's own start-up
caches) and prints the page's size and each open's navigation-start -> load-event time, from
the page's own ``performance`` timing.

    python benchmarks/bench_report_open.py reports/latest/claims.html
"""

from __future__ import annotations

import sys
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

BROWSER = Path("/usr/bin/chromium")
DRIVER = Path("/usr/bin/chromedriver")
OPENS = 5


def main(path: str) -> None:
    page = Path(path).resolve()
    options = webdriver.ChromeOptions()
    options.binary_location = str(BROWSER)
    for flag in ("--headless=new", "--no-sandbox", "--window-size=1400,900"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(str(DRIVER)), options=options)
    try:
        times = []
        for _ in range(OPENS):
            driver.get("about:blank")
            driver.get(page.as_uri())
            times.append(
                driver.execute_script(
                    "var t = performance.getEntriesByType('navigation')[0];"
                    "return t.loadEventEnd - t.startTime;"
                )
            )
    finally:
        driver.quit()
    print(f"{page}: {page.stat().st_size / 1e6:.2f} MB")
    print("open to load event (ms): " + ", ".join(f"{t:.0f}" for t in times))
    print(f"median {sorted(times)[len(times) // 2]:.0f} ms")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "reports/latest/claims.html")
