"""Drive a real JupyterLab in headless Chromium: shared by the browser test and the README screenshots.

    python tests/browser/lab_driver.py docs/    # regenerate docs/stage-view.png and docs/explorer.png

Uses Debian's chromium (/usr/bin/chromium); never downloads a browser.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
REPO = Path(__file__).resolve().parents[2]

SETUP = "%load_ext toycompiler\nimport torch"
STAGES = """%%compile --backend cpp
def f(x, y):
    a = torch.sin(x) * 2
    b = torch.cos(y) + a
    return torch.relu(b)
f(torch.randn(1_000_000), torch.randn(1_000_000))"""  # big enough that one fused kernel beats four eager ops
EXPLAIN = """%%compile --backend cpp --explain --no-timing
def g(x):
    y = torch.sin(x) * 2
    print("y is ready")
    return torch.cos(y) + 1
g(torch.randn(1000))"""  # a graph before the break, one after it (in the resume function)

BCAST = """%%compile --backend cpp --no-timing
def bcast(x, y):
    a = torch.sin(x) * 2  # loops over [8]
    return a + y  # loops over [4, 8]
bcast(torch.randn(8), torch.randn(4, 8))"""  # lesson 09: "cannot fuse buf0+buf1 with buf2: iteration spaces differ"
DEEP = """%%compile --backend cpp --no-timing
layers = [m for _ in range(12) for m in (torch.nn.Linear(16, 16), torch.nn.ReLU())]
deep = torch.nn.Sequential(*layers).requires_grad_(False)
deep(torch.randn(4, 16));"""  # a 12-layer model for inference: 12 kernels, 225 guards

# Every visible box whose content is wider than it, and which cannot be scrolled sideways: cut off.
CUT_OFF_JS = """(root) => {
  const out = [];
  document.querySelectorAll(root + " *").forEach((n) => {
    if (!(n instanceof HTMLElement) || !n.getClientRects().length) return;
    const s = getComputedStyle(n);
    if (s.display === "inline" || n.scrollWidth <= n.clientWidth + 1) return;
    if (s.overflowX === "auto" || s.overflowX === "scroll") {
      // scrollable: the scrollbar must take room (a classic, visible scrollbar)
      if (n.offsetHeight - n.clientHeight - parseFloat(s.borderTopWidth) - parseFloat(s.borderBottomWidth) > 0) return;
    }
    out.push([n.className || n.tagName, n.scrollWidth, n.clientWidth, (n.textContent || "").trim().slice(0, 60)]);
  });
  return out;
}"""


def notebook(cells: list[str]) -> dict:
    code = [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
             "source": c.splitlines(True)} for c in cells]
    return {"cells": code, "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python",
                                                       "name": "python3"}},
            "nbformat": 4, "nbformat_minor": 5}


def lesson_with_compile_cell() -> Path | None:
    """Lesson 01, once it uses %%compile; until then the test writes its own notebook.

    Lesson 01 ("why compile") has no %%compile cell yet: it calls toycompiler.compile and
    toycompiler.explain directly, and its timeit cells (sizes up to 10**7) would spend most
    of the browser test's budget. The first %%compile cell is in lesson 02.
    """
    for path in sorted(glob.glob(str(REPO / "lessons" / "01_*.ipynb"))):
        if "%%compile" in Path(path).read_text(encoding="utf-8"):
            return Path(path)
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def jupyter_lab(root: Path, timeout: float = 60.0, theme: str | None = None):
    """Start JupyterLab on a free localhost port serving ``root``; yield its base URL.

    ``theme="JupyterLab Dark"``: start with that theme. Settings live in a private settings dir.
    """
    port = free_port()
    bindir = os.path.dirname(sys.executable)
    env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""), JUPYTER_PLATFORM_DIRS="1")
    # Every cell attached to the page, in view or not (the default skips rendering cells out of view).
    settings = {("notebook-extension", "tracker"): {"windowingMode": "none"}}
    if theme is not None:
        settings[("apputils-extension", "themes")] = {"theme": theme}
    for (extension, name), values in settings.items():
        folder = root / ".lab-settings" / "@jupyterlab" / extension
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{name}.jupyterlab-settings").write_text(json.dumps(values), encoding="utf-8")
    env["JUPYTERLAB_SETTINGS_DIR"] = str(root / ".lab-settings")
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ip=127.0.0.1",
           "--ServerApp.token=", "--ServerApp.password=", "--allow-root", f"--ServerApp.root_dir={root}",
           "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
           "--ServerApp.disable_check_xsrf=True"]
    log = open(root / "jupyter.log", "w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + timeout
        while True:
            try:
                urllib.request.urlopen(url + "/api/status", timeout=2)
                break
            except OSError:
                if proc.poll() is not None or time.time() > deadline:
                    raise RuntimeError("JupyterLab did not start:\n" + (root / "jupyter.log").read_text())
                time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def run_all(page, url: str, name: str, wait_for: str, timeout_ms: int = 90_000) -> None:
    """Open a notebook in JupyterLab, run every cell, and wait for ``wait_for`` to appear."""
    page.goto(f"{url}/lab/tree/{name}?reset")  # a fresh workspace: only this notebook open
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
    with contextlib.suppress(Exception):  # JupyterLab may ask which kernel to start
        page.click(".jp-Dialog .jp-mod-accept", timeout=8_000)
    with contextlib.suppress(Exception):  # and whether to fetch news: no
        page.click(".jp-toast-button:text-is('No')", timeout=1_000)
    page.wait_for_selector(".jp-Notebook-ExecutionIndicator[data-status='idle'] >> visible=true", timeout=60_000)
    page.click(".lm-MenuBar-itemLabel:text-is('Run')")
    page.click(".lm-Menu-itemLabel:text-is('Run All Cells')")
    page.wait_for_selector(wait_for, timeout=timeout_ms)


def browser(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def prepare_root(tmp: Path, cells: list[str], name: str) -> str:
    lesson = lesson_with_compile_cell()
    if lesson is not None and name == "views.ipynb":
        shutil.copy(lesson, tmp / lesson.name)
        return lesson.name
    (tmp / name).write_text(json.dumps(notebook(cells)), encoding="utf-8")
    return name


def docs_screenshots(out: Path) -> None:
    """The README pictures: the stage view (two panes, a line selected) and the explorer."""
    from playwright.sync_api import sync_playwright

    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        root = Path(tmp)
        # No timing chart in the picture: on a shared machine eager's thread pool makes the ratio meaningless.
        stages = STAGES.replace("--backend cpp", "--backend cpp --no-timing", 1)
        (root / "stages.ipynb").write_text(json.dumps(notebook([SETUP, stages])), encoding="utf-8")
        (root / "explorer.ipynb").write_text(json.dumps(notebook([SETUP, EXPLAIN])), encoding="utf-8")
        with jupyter_lab(root) as url:
            b = browser(p)
            page = b.new_page(viewport={"width": 1500, "height": 1400})
            run_all(page, url, "stages.ipynb", ".tc-live .tc-stageview .tc-toolbar")
            view = page.locator(".tc-live .tc-stageview").first
            view.locator("[data-tc-stage='source'] .tc-row", has_text="torch.cos").first.click()  # Source | Kernels
            page.wait_for_timeout(300)
            page.locator(".tc-live .tc-root").first.screenshot(path=str(out / "stage-view.png"))
            page = b.new_page(viewport={"width": 1700, "height": 2400})  # tall: the whole explorer in view
            run_all(page, url, "explorer.ipynb", ".tc-live .tc-explorer")
            page.locator(".tc-live .tc-root").first.screenshot(path=str(out / "explorer.png"))
            b.close()


if __name__ == "__main__":
    docs_screenshots(Path(sys.argv[1] if len(sys.argv) > 1 else "docs"))
