"""The widget's front-end module in a plain page, as VS Code and Colab host it: no JupyterLab.

anywidget's contract with a host is small: import the widget's ES module, take its
default export (an object with ``render``, or a function returning one), and call
``render({model, el})`` with a model that has ``get``, ``set``, ``on``,
``save_changes`` and ``send``. VS Code's and Colab's widget managers do that; here a
twenty-line stand-in does it in headless Chromium, with a fake model carrying the
view's data (its HTML, kind and source) exactly as the Python side syncs it.

The same page checks the layout rules at 1400x1000: long lines (lesson 09's fusion
decision) wrap or scroll with a scrollbar, never cut off; a 12-layer model's view
stays short, folds its repeated kernels and filters by name. Screenshots go to
test-artifacts/.
"""

import json
import os

import pytest
import torch

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

if not os.path.exists("/usr/bin/chromium"):
    pytest.skip("browser tests need /usr/bin/chromium (make browser-deps); skipped", allow_module_level=True)

import lab_driver as lab  # noqa: E402
from toycompiler.widgets import explore, stage_view  # noqa: E402

import toycompiler  # noqa: E402

ARTIFACTS = lab.REPO / "test-artifacts"
STATIC = lab.REPO / "widgets" / "static"
HOST = "http://widget.test/"

# The host's part, as anywidget's front end does it: import the module, render into an element.
RUNTIME = """
export function fakeModel(state) {
  const listeners = {}, sent = [];
  return {
    get: (key) => state[key],
    set(key, value) { state[key] = value; (listeners["change:" + key] || []).forEach((f) => f()); },
    on(event, f) { (listeners[event] = listeners[event] || []).push(f); },
    off() {}, save_changes() {}, send(msg) { sent.push(msg); }, sent,
  };
}
export async function mount(state, el) {
  const mod = await import("./view.js");
  let widget = mod.default ?? mod;
  if (typeof widget === "function") widget = await widget();
  const model = fakeModel(state);
  if (widget.initialize) await widget.initialize({ model });
  await widget.render({ model, el });
  return model;
}
"""
PAGE = """<!DOCTYPE html><html><head><meta charset="utf-8"><link rel="stylesheet" href="view.css"></head>
<body style="margin:8px"><div id="out"></div><script type="module">
import { mount } from "./runtime.js";
const states = await (await fetch("./states.json")).json();
window.models = [];
for (const state of states) {
  const el = document.createElement("div");
  document.getElementById("out").appendChild(el);
  window.models.push(await mount(state, el));
}
window.mounted = true;
</script></body></html>"""

def bcast(x, y):
    a = torch.sin(x) * 2  # loops over [8]
    return a + y  # loops over [4, 8]


def noisy(x):
    y = torch.sin(x) * 2
    print("y is ready")
    return torch.cos(y) + 1




def deep_model(layers: int = 12) -> torch.nn.Sequential:
    torch.manual_seed(0)
    layers = [m for _ in range(layers) for m in (torch.nn.Linear(16, 16), torch.nn.ReLU())]
    # for inference: in training the last ReLU also stores its mask for the backward, so its kernel differs
    return torch.nn.Sequential(*layers).requires_grad_(False)


def state_of(view) -> dict:
    """What the Python side syncs (live.LiveView's traits)."""
    source = view.source_text() if hasattr(view, "source_text") else ""
    return {"html": view.html(), "kind": view.kind, "source": source, "status": ""}


def open_page(playwright, states: list[dict], width: int = 1400, height: int = 1000):
    files = {"index.html": (PAGE, "text/html"), "runtime.js": (RUNTIME, "text/javascript"),
             "view.js": ((STATIC / "view.js").read_text(encoding="utf-8"), "text/javascript"),
             "view.css": ((STATIC / "view.css").read_text(encoding="utf-8"), "text/css"),
             "states.json": (json.dumps(states), "application/json")}
    b = lab.browser(playwright)
    page = b.new_page(viewport={"width": width, "height": height})

    def serve(route):
        body, kind = files[route.request.url[len(HOST):] or "index.html"]
        route.fulfill(status=200, body=body, content_type=kind)

    page.route(HOST + "**", serve)  # a page served from nowhere: module scripts need an http origin
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(HOST + "index.html")
    page.wait_for_function("window.mounted === true", timeout=30_000)
    assert not errors, errors
    return b, page


def test_view_module_renders_with_a_fake_anywidget_model_in_a_plain_page(report):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    toycompiler.reset()
    explorer = explore(noisy, torch.randn(100), backend="cpp")
    with sync_playwright() as p:
        b, page = open_page(p, [state_of(stage_view(report)), state_of(explorer)])
        try:
            view = page.locator(".tc-live .tc-stageview").first
            visible = view.locator(".tc-grid > .tc-section:visible")
            assert [visible.nth(i).get_attribute("data-tc-stage") for i in range(visible.count())] == \
                ["source", "kernels"]
            view.locator("[data-tc-stage='source'] .tc-row", has_text="torch.sin").first.click()
            selected = view.locator("[data-tc-stage='kernels'] .tc-sel").all_inner_texts()
            assert selected and any("sin" in t for t in selected) and not any("cos" in t for t in selected)
            # the explorer's re-run goes back to Python as a message; a new html from Python redraws
            page.locator(".tc-rerun button").click()
            sent = page.evaluate("window.models[1].sent")
            assert sent == [{"type": "rerun", "source": explorer.source_text()}]
            page.evaluate("window.models[1].set('html', '<div class=\"tc-explorer\">redrawn</div>')")
            assert page.locator(".tc-live").nth(1).inner_text().startswith("redrawn")
        finally:
            page.screenshot(path=str(ARTIFACTS / "plain-page.png"), full_page=True)
            b.close()


def test_long_lines_wrap_or_scroll_never_cut_off():
    """Lesson 09's broadcast: `cannot fuse buf0+buf1 with buf2: iteration spaces differ ([8] vs [4, 8])`."""
    from playwright.sync_api import sync_playwright

    toycompiler.reset()
    report = toycompiler.explain(bcast, backend="cpp")(torch.randn(8), torch.randn(4, 8))
    with sync_playwright() as p:
        b, page = open_page(p, [state_of(stage_view(report))])
        try:
            view = page.locator(".tc-live .tc-stageview").first
            for layout in ("two panes", "all stages"):
                if layout == "all stages":
                    view.locator(".tc-toolbar input[type=checkbox]").check()
                cut = page.evaluate(lab.CUT_OFF_JS, ".tc-live")
                assert not cut, (layout, cut)
            decision = view.locator("[data-tc-stage='fusion'] .tc-row", has_text="iteration spaces differ")
            assert decision.count() == 1 and decision.inner_text().strip().endswith("vs [4, 8])")
            box = decision.bounding_box()
            pane = view.locator("[data-tc-stage='fusion']").bounding_box()
            assert box["x"] + box["width"] <= pane["x"] + pane["width"] + 1  # inside its pane, wrapped
            view.locator("[data-tc-stage='fusion']").screenshot(path=str(ARTIFACTS / "long-lines-fusion.png"))
        finally:
            page.screenshot(path=str(ARTIFACTS / "long-lines.png"), full_page=True)
            b.close()


def test_a_deep_model_view_stays_short_folds_repeats_and_filters_by_name():
    from playwright.sync_api import sync_playwright

    toycompiler.reset()
    report = toycompiler.explain(deep_model(), backend="cpp")(torch.randn(4, 16))
    with sync_playwright() as p:
        b, page = open_page(p, [state_of(stage_view(report))])
        try:
            view = page.locator(".tc-live .tc-stageview").first
            assert view.bounding_box()["height"] < 1000  # two panes, each scrolling on its own
            kernels = view.locator(".tc-kernel:visible")
            assert kernels.count() == 1  # the other eleven ReLU kernels fold under the first
            assert "11 more kernels" in view.locator("details.tc-alike > summary").inner_text()
            view.locator(".tc-toolbar select").nth(1).select_option("guards")
            guards = view.locator("[data-tc-stage='guards']")
            assert guards.locator(".tc-guard-input:visible").count() <= 6
            assert guards.locator("summary", has_text="more inputs").count() == 1
            view.locator(".tc-toolbar select").nth(1).select_option("kernels")
            page.fill(".tc-filter", "relu_11")  # the last ReLU's FX node, computed by the last kernel
            names = [k.get_attribute("data-tc-kernel") for k in kernels.all()]
            assert names == ["cpp_relu_11", "cpp_relu_23"]  # ... and a kernel whose name has it
            assert "2 of 12 kernels" in view.locator(".tc-filter-count").inner_text()
            view.locator(".tc-toolbar input[type=checkbox]").check()
            fx_rows = view.locator("[data-tc-stage='fx'] .tc-row:visible").all_inner_texts()
            assert fx_rows and all("relu_11" in t for t in fx_rows)
            assert view.locator("[data-tc-stage='fx'] g.node[style*='opacity']").count() > 40  # the rest fade
            page.fill(".tc-filter", "")
            view.locator(".tc-toolbar input[type=checkbox]").uncheck()
            assert view.bounding_box()["height"] < 1000
        finally:
            page.screenshot(path=str(ARTIFACTS / "deep-model.png"), full_page=True)
            b.close()
