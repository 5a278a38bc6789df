"""A real JupyterLab in headless Chromium: the %%compile views render live, and clicking works.

Runs a notebook with ``%load_ext toycompiler`` and a ``%%compile`` cell (lesson
01 once it has one), then checks the page: the stage view, a graph picture
(SVG), highlighted kernel source, the timing chart, and that clicking a
source line highlights the kernel lines compiled from it. Saves a screenshot
to test-artifacts/.
"""

import os
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

if not os.path.exists("/usr/bin/chromium"):
    pytest.skip("browser tests need /usr/bin/chromium (make browser-deps); skipped", allow_module_level=True)

import lab_driver as lab  # noqa: E402

ARTIFACTS = lab.REPO / "test-artifacts"


def test_compile_cell_views_render_and_link_in_jupyterlab():
    from playwright.sync_api import sync_playwright

    start = time.time()
    ARTIFACTS.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        root = Path(tmp)
        name = lab.prepare_root(root, [lab.SETUP, lab.STAGES], "views.ipynb")
        with lab.jupyter_lab(root) as url:
            b = lab.browser(p)
            page = b.new_page(viewport={"width": 1400, "height": 1000})
            try:
                lab.run_all(page, url, name, ".tc-live .tc-stageview .tc-toolbar")
                page.wait_for_selector(".tc-live .tc-timing svg", timeout=60_000)
                view = page.locator(".tc-live .tc-stageview").first
                assert view.locator(".tc-svg svg").count() >= 2  # FX graph and fusion groups
                assert view.locator(".tc-kernel .tc-tok").count() > 10  # pygments-highlighted kernel
                assert page.locator(".tc-live .tc-chart svg").count() == 1  # the timing chart

                selects = view.locator(".tc-toolbar select")
                selects.nth(0).select_option("two")  # any two stages side by side
                selects.nth(1).select_option("source")
                selects.nth(2).select_option("kernels")
                assert view.locator(".tc-grid > .tc-section:visible").count() == 2

                sin_line = view.locator("[data-tc-stage='source'] .tc-row", has_text="torch.sin").first
                sin_line.click()
                selected = view.locator("[data-tc-stage='kernels'] .tc-sel")
                assert selected.count() > 0
                texts = selected.all_inner_texts()
                assert any("sin" in t for t in texts) and not any("cos" in t for t in texts)
                selects.nth(0).select_option("all")  # the other stages lit up too
                assert view.locator("[data-tc-stage='bytecode'] .tc-sel").count() > 0
                assert view.locator("[data-tc-stage='fx'] svg g.tc-sel").count() > 0
                assert view.locator("[data-tc-stage='ir'] .tc-sel").count() > 0
            finally:
                page.screenshot(path=str(ARTIFACTS / "lab.png"), full_page=True)
                b.close()
    print(f"browser test took {time.time() - start:.1f} s")
