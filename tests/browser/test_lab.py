"""A real JupyterLab in headless Chromium: the %%compile views render live, and clicking works.

Runs a notebook with ``%load_ext toycompiler`` and a ``%%compile`` cell (lesson
01 once it has one), then checks the page: the stage view (Source beside
Kernels by default), a graph picture (SVG), highlighted kernel source, the
timing chart, and that clicking a source line highlights the kernel lines
compiled from it. A second run, in JupyterLab's dark theme, measures the
contrast of the explorer's graph regions, break marks and selection from the
page's computed styles, and covers the learner's error paths: a module, an
``--explain`` cell (no timing) and a syntax error. A third opens an nbconvert
export in Chromium with no kernel. Screenshots go to test-artifacts/.
"""

import os
import tempfile
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

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
        name = lab.prepare_root(root, [lab.SETUP, lab.STAGES, lab.BCAST, lab.DEEP], "views.ipynb")
        with lab.jupyter_lab(root) as url:
            b = lab.browser(p)
            page = b.new_page(viewport={"width": 1400, "height": 1000})
            try:
                lab.run_all(page, url, name, ".tc-live .tc-stageview .tc-toolbar")
                page.wait_for_selector(".tc-live .tc-timing svg", timeout=60_000)
                view = page.locator(".tc-live .tc-stageview").first
                # the default: Source beside Kernels, a splitter between them
                visible = view.locator(".tc-grid > .tc-section:visible")
                assert visible.count() == 2
                assert [visible.nth(i).get_attribute("data-tc-stage") for i in range(2)] == ["source", "kernels"]
                assert view.locator(".tc-splitter:visible").count() == 1
                assert view.locator(".tc-kernel .tc-tok").count() > 10  # pygments-highlighted kernel
                assert page.locator(".tc-live .tc-chart svg").count() == 1  # the timing chart

                sin_line = view.locator("[data-tc-stage='source'] .tc-row", has_text="torch.sin").first
                sin_line.click()
                selected = view.locator("[data-tc-stage='kernels'] .tc-sel")
                assert selected.count() > 0
                texts = selected.all_inner_texts()
                assert any("sin" in t for t in texts) and not any("cos" in t for t in texts)
                view.locator(".tc-toolbar select").nth(1).select_option("fx")  # any stage, one click away
                assert view.locator("[data-tc-stage='fx'] svg g.tc-sel").count() > 0
                view.locator(".tc-toolbar input[type=checkbox]").check()  # all stages: the others lit up too
                assert view.locator(".tc-svg svg").count() >= 2  # FX graph and fusion groups
                assert view.locator("[data-tc-stage='bytecode'] .tc-sel").count() > 0
                assert view.locator("[data-tc-stage='ir'] .tc-sel").count() > 0

                # lesson 09's long fusion decision, at 1400x1000 inside JupyterLab: wrapped or scrollable, never cut
                page.wait_for_function("document.querySelectorAll('.tc-live .tc-stageview .tc-toolbar').length >= 3",
                                       timeout=120_000)
                bcast = page.locator(".tc-live .tc-stageview").nth(1)
                bcast.locator(".tc-toolbar select").nth(1).select_option("fusion")
                decision = bcast.locator("[data-tc-stage='fusion'] .tc-row", has_text="iteration spaces differ")
                assert decision.inner_text().strip().endswith("vs [4, 8])")
                bcast.locator(".tc-toolbar input[type=checkbox]").check()
                cut = page.evaluate(lab.CUT_OFF_JS, ".jp-OutputArea")
                assert not cut, cut
                # a 12-layer model: the view stays shorter than the window, the kernel list folds and filters
                deep = page.locator(".tc-live .tc-stageview").nth(2)
                deep.scroll_into_view_if_needed()
                assert deep.bounding_box()["height"] < 1000
                assert deep.locator(".tc-kernel:visible").count() == 1
                deep.locator(".tc-filter").fill("buf23")
                assert deep.locator(".tc-kernel:visible").count() == 1
                assert "1 of 12 kernels" in deep.locator(".tc-filter-count").inner_text()
                deep.screenshot(path=str(ARTIFACTS / "lab-deep-model.png"))
            finally:
                page.screenshot(path=str(ARTIFACTS / "lab.png"), full_page=True)
                b.close()
    print(f"browser test took {time.time() - start:.1f} s")


MODULE = """%%compile --backend cpp --no-timing
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x):
        return torch.relu(self.fc(x))

net = Net()
net(torch.randn(2, 8));"""
SYNTAX = "%%compile --backend cpp\ndef broken(x)\n    return x"
STEPPER = """import toycompiler
from toycompiler.widgets import stepper
def h(x):
    y = torch.sin(x) * 2
    print("h: y is ready")
    return y
stepper(toycompiler.explain(h, backend="cpp")(torch.randn(8)))"""  # steps that add nodes, then a break

# WCAG contrast of every text element under `selector` against the first opaque background behind it.
CONTRAST_JS = """(selector) => {
  const rgb = (c) => (c.match(/[\\d.]+/g) || []).map(Number);
  const lum = ([r, g, b]) => [r, g, b]
    .map((v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
    .reduce((a, v, i) => a + v * [0.2126, 0.7152, 0.0722][i], 0);
  // translucent backgrounds (the transformed bytecode's shading) are blended over what lies behind them
  const bg = (n) => {
    const layers = [];
    let base = [255, 255, 255];
    for (; n; n = n.parentElement) {
      const c = rgb(getComputedStyle(n).backgroundColor);
      if (c.length === 3 || c[3] >= 1) { base = c.slice(0, 3); break; }
      if (c[3] > 0) layers.push(c);
    }
    for (const l of layers.reverse()) base = base.map((v, i) => l[3] * l[i] + (1 - l[3]) * v);
    return base;
  };
  const out = [];
  document.querySelectorAll(selector).forEach((n) => {
    if (![...n.childNodes].some((c) => c.nodeType === 3 && c.textContent.trim())) return;
    const a = lum(rgb(getComputedStyle(n).color)), b = lum(bg(n));
    out.push([(Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05), n.textContent.trim().slice(0, 40)]);
  });
  return out;
}"""


def test_dark_theme_contrast_and_learner_error_paths():
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    cells = [lab.SETUP, lab.EXPLAIN.replace(" --no-timing", ""), MODULE, STEPPER, SYNTAX]
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        root = Path(tmp)
        (root / "dark.ipynb").write_text(__import__("json").dumps(lab.notebook(cells)), encoding="utf-8")
        with lab.jupyter_lab(root, theme="JupyterLab Dark") as url:
            b = lab.browser(p)
            page = b.new_page(viewport={"width": 1400, "height": 1600})
            try:
                lab.run_all(page, url, "dark.ipynb", ".jp-OutputArea-output:has-text('SyntaxError')")
                assert page.locator("body[data-jp-theme-light='false']").count() == 1
                outputs = page.locator(".jp-Cell .jp-OutputArea")
                explain = outputs.nth(1).inner_text()
                printed = [ln for ln in explain.splitlines() if ln.strip() == "y is ready"]  # the source shows it too
                assert len(printed) == 1 and "timing of" not in explain  # ran once, as the cell called it
                assert "net: 1 compilation" in outputs.nth(2).inner_text()  # the module, compiled
                error = outputs.nth(4).inner_text()
                assert "Cell In[5], line 1" in error and "SyntaxError" in error and "Traceback" not in error
                assert len(error.strip().splitlines()) <= 4

                page.locator(".tc-live .tc-explorer [data-tc-stage='source'] .tc-row", has_text="torch.cos").click()
                page.locator(".tc-live .tc-explorer").first.screenshot(path=str(ARTIFACTS / "dark-explorer.png"))
                ratios = {what: page.evaluate(CONTRAST_JS, sel) for what, sel in {
                    "graph regions": ".tc-live .tc-shade, .tc-live .tc-shade *",
                    "break marks": ".tc-live .tc-breakmark",
                    "selection": ".tc-live div.tc-sel, .tc-live div.tc-sel *",
                    "notes": ".tc-live .tc-note",
                    "stepper": ".tc-live .tc-stepper, .tc-live .tc-stepper *",
                    "transformed bytecode": ".tc-live .tc-frame .tc-code, .tc-live .tc-frame .tc-code *",
                    "guards": ".tc-live .tc-guards, .tc-live .tc-guards *"}.items()}
                lines = [f"{what}: min {min(r for r, _ in rs):.2f} over {len(rs)} elements"
                         for what, rs in ratios.items() if rs]
                (ARTIFACTS / "dark-contrast.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
                print("\n".join(lines))
                assert all(ratios[k] for k in ("graph regions", "break marks", "selection", "stepper",
                                                 "transformed bytecode", "guards"))
                steps = page.locator(".tc-live .tc-stepper")
                assert steps.locator(".tc-step span", has_text="did:").count() > 0
                page.locator(".tc-live .tc-stepper").first.screenshot(path=str(ARTIFACTS / "dark-stepper.png"))
                low = [(what, round(r, 2), t) for what, rs in ratios.items() for r, t in rs if r < 4.5]
                assert not low, low
            finally:
                page.screenshot(path=str(ARTIFACTS / "dark.png"), full_page=True)
                b.close()


def test_nbconvert_export_of_lesson_02_shows_the_views_in_chromium():
    import nbformat
    from nbclient import NotebookClient
    from nbconvert import HTMLExporter
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    lesson = lab.REPO / "lessons" / "02_first_compile.ipynb"
    nb = nbformat.read(lesson, as_version=4)
    NotebookClient(nb, timeout=180, kernel_name="python3",
                   resources={"metadata": {"path": str(lesson.parent)}}).execute()  # headless, as nbconvert --execute
    body, _ = HTMLExporter().from_notebook_node(nb)
    out = ARTIFACTS / "lesson02-export.html"
    out.write_text(body, encoding="utf-8")
    with sync_playwright() as p:
        b = lab.browser(p)
        page = b.new_page(viewport={"width": 1400, "height": 1000})
        page.goto(out.as_uri())
        views = page.locator(".tc-root")
        assert views.count() >= 2 and page.locator(".tc-root .tc-stageview").count() >= 1
        assert page.locator(".tc-root svg").count() >= 1
        views.first.scroll_into_view_if_needed()
        page.screenshot(path=str(ARTIFACTS / "lesson02-export.png"))
        b.close()
