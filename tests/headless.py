"""Headless Chromium through Selenium for the browser tests (the labs report, ``expkit ui``). Debian's
``chromium`` and ``chromium-driver`` are installed by ``make test`` when missing; without them the test says
it was skipped and why. Imported by name: pytest puts tests/ on sys.path for its conftest."""

from __future__ import annotations

import shutil
from typing import Any

import pytest

_ARGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def chrome() -> Any:
    """A new headless Chromium WebDriver (the caller quits it), or a skip naming what is missing."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        pytest.skip("headless Chromium/chromedriver not installed (make test installs them as root)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    opts.binary_location = chromium
    for arg in _ARGS:
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(executable_path=driver), options=opts)
