"""claims.html as a person sees it: opened in headless Chromium, looked at, clicked.

By default the page is a report written here from a few rows; ``QK_REPORT_HTML=path`` opens a
real one instead (``.ci/run`` does this for the run's own ``reports/latest/claims.html``).
Screenshots of the first screen and of one claim (S6a where the page has it) go beside the
page (``screenshot-*.png``).
Skipped, with the reason, where Chromium, its driver or selenium is missing (``.ci/run``
installs them: Debian's ``chromium`` and ``chromium-driver``, and selenium from the dev extra).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_claims.checks import judged_check
from pytest_claims.refs import EvidenceRef
from pytest_claims.reports import write_reports
from pytest_claims.row import ClaimResult

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")


def _missing() -> str:
    if BROWSER is None or DRIVER is None:
        return "no chromium/chromedriver on PATH (apt-get install chromium chromium-driver)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[dev]')"
    return ""


pytestmark = pytest.mark.skipif(bool(_missing()), reason=_missing() or "-")


def _rows() -> list[ClaimResult]:
    paper = EvidenceRef("paper", "gpt2", "ape")
    toy = EvidenceRef("toy", "rope", "rope", regime="cpu", population=8)
    seeds = [EvidenceRef("toy", "rope", "rope", regime="cpu", seed=s) for s in range(8)]
    figure = {
        "figure": "D_head percentile by scheme",
        "series": "gpt2",
        "x": ["ape"],
        "y": [0.21],
        "kind": "strip",
        "xlabel": "",
        "ylabel": "percentile",
        "xscale": "linear",
        "paper": False,
    }
    return [
        ClaimResult(
            nodeid="claims/test_s6.py::test_side[paper:gpt2]",
            claim="S6b",
            evidence=paper.evidence_id,
            ref=paper,
            section="6",
            statement="content-like prev heads under absolute positions",
            source="qk_spectral.tex:284",
            sentence="bottom-quartile under learned absolute (medians 0.21/0.23/0.14)",
            verdict="supported",
            checks=[judged_check("median percentile", 0.21, "<", 0.5, kind="statement")],
            figures=[figure],
        ),
        ClaimResult(
            nodeid="claims/test_s6.py::test_side[toy-cpu:rope-n8]",
            claim="S6a",
            evidence=toy.evidence_id,
            ref=toy,
            section="6",
            statement="rotational prev heads under RoPE",
            verdict="refuted",
            checks=[],
            seeds={"supported": 1, "refuted": 7, "inconclusive": 0, "not-applicable": 0},
        ),
        *(
            ClaimResult(
                nodeid=f"claims/test_s6.py::test_side[{seed_ref.evidence_id}]",
                claim="S6a",
                evidence=seed_ref.evidence_id,
                ref=seed_ref,
                section="6",
                verdict="supported" if seed_ref.seed == 0 else "refuted",
                checks=[
                    judged_check(
                        "pct", 0.9 if seed_ref.seed == 0 else 0.1, ">", 0.5, kind="statement"
                    )
                ],
                population=f"claims/test_s6.py::test_side[{toy.evidence_id}]",
            )
            for seed_ref in seeds
        ),
    ]


@pytest.fixture
def page(tmp_path: Path) -> Path:
    given = os.environ.get("QK_REPORT_HTML")
    if given:
        return Path(given).resolve()
    baseline: dict[str, Any] = {"baseline": "reports/baseline.json"}
    return write_reports(_rows(), tmp_path, baseline)[2]


@pytest.fixture
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(BROWSER)
    for flag in ("--headless=new", "--no-sandbox", "--window-size=1400,900"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(DRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def test_the_report_renders_navigates_and_filters_in_a_browser(page: Path, browser):
    from selenium.webdriver.common.by import By

    browser.get(page.as_uri())
    assert browser.title == "Claims report"
    browser.save_screenshot(str(page.parent / "screenshot-first-screen.png"))
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, f"console errors: {errors}"

    overflow = browser.execute_script(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0, f"the page is {overflow}px wider than the window"
    sections = browser.find_elements(By.CSS_SELECTOR, "section.claim")
    assert sections, "no claim section"
    for section in sections:
        size = section.size
        assert size["height"] > 0 and size["width"] > 0, section.get_attribute("id")
    for image in browser.find_elements(By.TAG_NAME, "img"):
        assert browser.execute_script("return arguments[0].naturalWidth", image) > 0

    # the index's last link brings its claim into the window (the top, where the page is
    # long enough to scroll that far)
    link = browser.find_elements(By.CSS_SELECTOR, "#index a")[-1]
    target = link.get_attribute("href").split("#", 1)[1]
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", link)
    link.click()  # a real click: fails if anything (a scrollbar, an overflow) covers the link
    assert browser.execute_script("return location.hash") == f"#{target}"
    top, height = browser.execute_script(
        "return [document.getElementById(arguments[0]).getBoundingClientRect().top,"
        " window.innerHeight]",
        target,
    )
    assert -1 < top < height, (
        f"#{target} is at {top}px after its index link ({height}px)"
    )  # sub-pixel scroll
    # one claim as a reviewer reads it: S6a where the page has it (the note's screenshot)
    shown = "S6a" if browser.find_elements(By.ID, "S6a") else target
    section = browser.find_element(By.ID, shown)
    browser.execute_script("arguments[0].scrollIntoView()", section)
    section.screenshot(str(page.parent / f"screenshot-{shown}.png"))

    # a verdict filter hides exactly the rows of that verdict
    # a row of a section's own table (seed rows sit folded inside their population's)
    rows = browser.find_elements(
        By.CSS_SELECTOR, "section.claim > table > tbody > tr[data-verdict]"
    )
    verdict = rows[0].get_attribute("data-verdict")
    box = browser.find_element(By.CSS_SELECTOR, f"#filters input[value='verdict:{verdict}']")
    box.click()
    for row in rows:
        hidden = not row.is_displayed()
        assert hidden == (row.get_attribute("data-verdict") == verdict)
    box.click()
    assert all(row.is_displayed() for row in rows)
    # seed rows are folded under their population, and unfold
    fold = browser.find_elements(By.CSS_SELECTOR, "section.claim details summary")
    seeds = [s for s in fold if "seed rows" in s.text]
    if seeds:
        seeds[0].click()
        inner = seeds[0].find_elements(By.XPATH, "../table//tr[@data-verdict]")
        assert inner and all(row.is_displayed() for row in inner)
