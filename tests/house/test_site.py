"""The built documentation site works from the file system, in a real (headless) browser: the
index loads, a navigation link reaches its page (not a directory listing), and search finds a
page. ``nox -s docs`` builds the site and runs this with ``LSQ_SITE_DIR=site``; elsewhere it is
skipped. Needs selenium (PyPI) and Chromium with its driver (Debian: ``apt-get install
chromium chromium-driver``); without them it is skipped with that reason."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

SITE = os.environ.get("LSQ_SITE_DIR")
WINDOW = (1280, 900)  # a laptop's browser window
# Pages with wide tables (the capability table, the benchmark and GPU tables) and the plots.
WIDE = ("backends.html", "benchmarks.html", "benchmark-grid.html", "benchmark-scaling.html", "gram-speed.html",
        "gpu-run.html", "methods.html", "ridge.html", "sparse.html", "accuracy.html")  # fmt: skip

pytestmark = pytest.mark.skipif(not SITE, reason="checks a built site: nox -s docs (or LSQ_SITE_DIR=site pytest ...)")


def _chromium():
    """The Chromium binary and its driver, or a skip that says what is missing (a failure
    where ``LSQ_SITE_BROWSER=required``, as ``nox -s docs`` sets it on CI)."""
    binary = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
    driver = shutil.which("chromedriver")
    if not (binary and driver):
        why = "no Chromium and chromedriver on PATH (Debian: apt-get install chromium chromium-driver)"
        if os.environ.get("LSQ_SITE_BROWSER") == "required":
            pytest.fail(why)
        pytest.skip(why)
    return binary, driver


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install selenium)")
    from selenium.webdriver.chrome.service import Service

    binary, driver = _chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        options.add_argument(arg)
    b = webdriver.Chrome(service=Service(driver), options=options)
    b.set_page_load_timeout(60)
    b.set_window_size(*WINDOW)  # the window's outer size; the page's own width is what is checked
    yield b
    b.quit()


@pytest.fixture(scope="module")
def index():
    path = Path(SITE).resolve() / "index.html"
    assert path.is_file(), f"{path} is missing: build the site first (mkdocs build)"
    return path.as_uri()


def test_index_loads_from_the_file_system(browser, index):
    browser.get(index)
    article = browser.find_element("css selector", "article")
    assert article.find_element("css selector", "h1").text.startswith("Overview")
    assert "lsq_backends.lstsq" in article.text


def test_a_navigation_link_reaches_its_page(browser, index):
    from selenium.webdriver.support import expected_conditions as ec
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(index)
    link = browser.find_element("css selector", "nav.md-nav--primary a[href$='methods.html']")
    browser.execute_script("arguments[0].click();", link)  # the sidebar may be collapsed at this width
    WebDriverWait(browser, 30).until(ec.url_contains("methods.html"))
    assert browser.current_url.startswith("file://"), browser.current_url
    heading = browser.find_element("css selector", "article h1").text
    assert heading.startswith("Choosing a method"), heading


def test_search_works_without_a_server(browser, index):
    from selenium.webdriver.support.ui import WebDriverWait

    browser.get(index)
    browser.execute_script("document.querySelector(\"label[for='__search']\").click();")
    box = browser.find_element("css selector", "input.md-search__input")
    box.click()
    box.send_keys("LSQR")

    def results(b):
        items = b.find_elements("css selector", ".md-search-result__item")
        return items or False

    items = WebDriverWait(browser, 60).until(results)
    assert any("lsqr" in i.text.lower() for i in items)


def _page(index, name):
    return index.rsplit("/", 1)[0] + "/" + name


@pytest.mark.parametrize("name", WIDE)
def test_wide_tables_fit_the_page(browser, index, name):
    """Every table fits the text column at a laptop's window width (the stylesheet's small font
    and tight cells), and nothing widens the page itself."""
    browser.get(_page(index, name))
    tables = browser.execute_script(
        """return Array.from(document.querySelectorAll('article table')).map(t => {
             const box = t.closest('.md-typeset__scrollwrap') || t.parentElement;
             return [t.rows[0].textContent.trim().slice(0, 40), t.scrollWidth, box.clientWidth];
           });"""
    )
    assert tables, f"{name} has no table"
    too_wide = [(head, width, room) for head, width, room in tables if width > room + 1]
    assert too_wide == []
    page, window = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth];")
    assert page <= window


def test_plots_load_and_fit(browser, index):
    browser.get(_page(index, "benchmarks.html"))
    images = browser.execute_script(
        """return Array.from(document.querySelectorAll('article img')).map(
             i => [i.getAttribute('src'), i.complete, i.naturalWidth, i.getBoundingClientRect().right]);"""
    )
    right = browser.execute_script("return document.querySelector('article').getBoundingClientRect().right;")
    assert len(images) >= 4
    for src, complete, natural, edge in images:
        assert complete and natural > 0, f"{src} did not load"
        assert edge <= right + 1, f"{src} runs past the text column"
