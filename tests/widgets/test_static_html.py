"""The static HTML: self-contained (no scripts), pictures as inline SVG, highlighted code."""

import re
import subprocess
import sys

import pytest
import torch
from IPython.core.interactiveshell import InteractiveShell
from toycompiler.widgets import Stepper, _render, explore, register_html, save_html, stage_view

import toycompiler


def test_stage_view_html_has_svg_highlighting_and_no_script(report):
    html = stage_view(report).html()
    assert "<script" not in html.lower()
    assert html.count("<svg") == 2  # FX graph and fusion groups
    assert 'class="tc-tok"' in html  # pygments spans
    assert "cluster" in html and "kernel0" in html
    for stage in ("source", "bytecode", "guards", "fx", "ir", "fusion", "kernels", "output"):
        assert f'data-tc-stage="{stage}"' in html


def test_fx_picture_colours_nodes_by_kernel_and_says_why_on_hover(frame):
    html = stage_view(frame).stage_html("fx")
    node = re.search(r'<g id="fx(?:&#45;|-)sin" class="node[^"]*">.*?</g>\s*</g>', html, re.S).group(0)
    assert "computed in kernel0" in node  # tooltip
    assert f'fill="{_render.PALETTE[0]}"' in node  # the first kernel's colour
    fusion = stage_view(frame).stage_html("fusion")
    assert "fused buf0 with buf1" in fusion


def sin_twice(x):
    return torch.sin(x) * 2


def noisy(x):
    y = x.sin()
    print("side effect")
    return y


def test_rejected_fusions_are_listed_as_cannot_fuse():
    with toycompiler.config.patch(fusion=False):
        report = toycompiler.explain(sin_twice, backend="cpp")(torch.randn(8))
    html = stage_view(report).html()
    assert "cannot fuse buf0 with buf1: fusion is turned off" in html
    assert html.count("cluster_") >= 2  # one named cluster per kernel


def sin_cos(x, y):
    a = torch.sin(x) * 2
    return torch.cos(y) + a


def test_text_form_is_the_same_for_two_separate_compiles():
    """Two compiles of one function from a clean state print the same text: counter-based
    names (buf0, kernel0), no addresses, no timings, no machine-specific cache paths."""
    args = torch.randn(16), torch.randn(16)
    texts = []
    for _ in range(2):
        toycompiler.reset()
        with toycompiler.config.patch(graph_cache=False):  # a cache lookup says hit or miss: differs on purpose
            texts.append(stage_view(toycompiler.explain(sin_cos, backend="cpp")(*args)).text())
    first, second = texts
    assert first == second
    assert "kernel0" in first and "buf0" in first
    assert not re.search(r"0x[0-9a-f]{6,}", first) and " ms" not in first
    assert "<cache>/" in first  # machine-specific cache paths are hidden


def test_save_html_writes_one_offline_file(report, tmp_path):
    path = save_html(report, tmp_path / "report.html")
    text = open(path, encoding="utf-8").read()
    assert text.startswith("<!DOCTYPE html>") and "<svg" in text
    assert "<script" not in text and "http://" not in text.replace("http://www.w3.org", "")
    assert stage_view(report).html() in text  # the whole stage view, not a summary


def test_artifacts_are_plain_text_until_ipython_registers_the_views(report):
    ip = InteractiveShell.instance()
    assert report._repr_html_().startswith("<pre>graphs: 1")  # the compiler's own HTML: its text
    register_html(ip)
    for artifact in (report, report.frames[0]):
        html = ip.display_formatter.format(artifact)[0]["text/html"]
        assert html.startswith('<div class="tc-root"') and "<svg" in html


def test_compiling_imports_no_view():
    code = ("import sys, torch, toycompiler\n"
            "def f(x):\n    return torch.sin(x) * 2\n"
            "toycompiler.explain(f, backend='cpp')(torch.randn(4))\n"
            "print(sorted(m for m in sys.modules if m.startswith('toycompiler.widgets')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_missing_graphviz_says_so_and_shows_text(frame, monkeypatch):
    monkeypatch.setattr(_render, "find_dot", lambda: None)
    html = stage_view(frame).html()
    assert "<svg" not in html
    assert "No picture: graphviz &#x27;dot&#x27; was not found" in html
    assert "Traceback" not in html


def test_mimebundle_has_plain_text_and_html(report):
    bundle = stage_view(report)._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}  # no live kernel here: no widget view
    assert bundle["text/plain"].startswith("1 compilation(s)")


def test_stepper_lists_every_step_with_stack_and_events(frame):
    s = Stepper(frame)
    text = s.text()
    assert text.count("step ") >= len(frame.translation.steps)
    assert "node added: sin" in text and "guard added: isinstance(x, Tensor)" in text
    html = s.html()
    assert html.count('data-tc-step="') == len(frame.translation.steps) and "<script" not in html


@pytest.mark.parametrize("language,needle", [("cpp", "std"), ("python", "def")])
def test_highlight_lines_keeps_one_string_per_line(language, needle):
    code = "int a = std::sin(1);\nreturn a;\n" if language == "cpp" else "def f(x):\n    return x\n"
    lines = _render.highlight_lines(code, language)
    assert len(lines) == 2 and needle in lines[0] and "tc-tok" in lines[0]


def test_explorer_html_has_no_script():
    html = explore(noisy, torch.randn(3), backend="cpp").html()
    assert "<script" not in html and "graph break" in html and "hint:" in html


def test_indentation_is_never_a_whitespace_only_node():
    # nbconvert's sanitizer collapses whitespace-only text between tags, which would lose indentation.
    line = _render.highlight_lines("def f():\n    return 1\n", "python")[1]
    assert re.match(r'<span class="tc-tok" style="[^"]*">    return</span>', line)


def softmax_rows(x):
    return torch.softmax(x, dim=-1)


def test_cpp_kernel_prelude_is_folded_and_kernel_lines_keep_their_numbers():
    frame = toycompiler.explain(softmax_rows, backend="cpp")(torch.randn(4, 8)).frames[0]
    (kernel,) = frame.backend.kernels
    html = stage_view(frame).stage_html("kernels")
    start = next(i for i, t in enumerate(kernel.source.splitlines(), 1) if t.startswith('extern "C" void'))
    assert f"lines 1-{start - 1}: declarations and helpers" in html and "<details" in html
    assert re.search(rf'<span class="tc-num"[^>]*>\s*{start}  </span>.*?void', html)  # numbering unchanged


def test_resume_function_stage_view_says_where_it_continues():
    report = toycompiler.explain(noisy, backend="cpp")(torch.randn(3))
    resume = next(f for f in report.frames if "<resume at" in f.source.name)
    text = stage_view(resume).text()
    line = noisy.__code__.co_firstlineno + 2  # print("side effect")
    assert "a resume function: runs the rest of the function from offset" in text and f"(line {line})" in text
