"""%%compile: option parsing, error messages, and running cells through a real IPython shell."""

import inspect
import re

import pytest
from IPython.core.interactiveshell import InteractiveShell
from toycompiler.widgets.magic import MagicOptions, MagicUsageError, parse_options, register_cell


@pytest.fixture(scope="module")
def ip():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "toycompiler.widgets")
    shell.run_cell("import torch")
    return shell


def test_load_ext_toycompiler_is_a_short_spelling_of_the_widgets_extension(ip):
    ip.magics_manager.magics["cell"].pop("compile")
    ip.extension_manager.loaded.discard("toycompiler")
    ip.run_line_magic("load_ext", "toycompiler")
    assert ip.find_cell_magic("compile").__doc__.startswith("usage: %%compile")


def test_parse_defaults_and_flags():
    assert parse_options("") == MagicOptions()
    opts = parse_options("--backend cpp --mode max-autotune --fullgraph --no-timing --explain")
    assert (opts.backend, opts.mode, opts.fullgraph, opts.timing, opts.explain) == \
        ("cpp", "max-autotune", True, False, True)
    assert parse_options("--help").help


@pytest.mark.parametrize("line,message", [
    ("--backend nope", "unknown backend 'nope'"),
    ("--bogus", "unrecognized arguments: --bogus"),
    ("--backend", "expected one argument"),
    ("--backend 'cpp", "cannot read the options"),
    ("--mode fastest", "argument --mode: invalid choice: 'fastest'"),
])
def test_bad_options_say_what_is_wrong(line, message):
    with pytest.raises(MagicUsageError, match=message):
        parse_options(line)


def test_wrong_option_prints_usage_and_runs_nothing(ip, capsys):
    ip.user_ns.pop("ran", None)
    ip.run_cell_magic("compile", "--nope", "ran = True\n")
    out = capsys.readouterr().out
    assert "%%compile: unrecognized arguments: --nope" in out and "usage: %%compile" in out
    assert "ran" not in ip.user_ns


def test_help_prints_usage_and_runs_nothing(ip, capsys):
    ip.run_cell_magic("compile", "--help", "ran_help = True\n")
    assert "--no-timing" in capsys.readouterr().out and "ran_help" not in ip.user_ns


CELL = '''\
def f(x, y):
    return torch.sin(x) + torch.cos(y) * 2
out = f(torch.randn(64), torch.randn(64))
'''


def test_cell_functions_stay_compiled_and_their_source_is_readable(ip, capsys):
    ip.run_cell_magic("compile", "--backend cpp --no-timing", CELL)
    text = capsys.readouterr().out
    import toycompiler

    f = ip.user_ns["f"]
    assert isinstance(f, toycompiler.api.CompiledFunction)
    assert f.fn.__code__.co_filename.startswith("<cell In[")
    assert inspect.getsource(f.fn).startswith("def f(x, y):")
    assert "f: 1 compilation(s), graphs: 1, graph breaks: 0" in text
    assert "StageView [" in text and "== Kernels" in text
    x = ip.user_ns["torch"].randn(64)
    ip.user_ns["torch"].testing.assert_close(ip.user_ns["out"], f.fn(x, x) * 0 + ip.user_ns["out"])


def test_timing_is_shown_unless_turned_off(ip, capsys):
    ip.run_cell_magic("compile", "--backend cpp", CELL)
    text = capsys.readouterr().out
    assert "timing of f (median of" in text and "compile" in text


def test_graph_break_reason_points_at_the_cell_line(ip, capsys):
    cell = 'def g(x):\n    y = x.sin()\n    print("in g")\n    return y\ng(torch.randn(3))\n'
    ip.run_cell_magic("compile", "--backend cpp --explain --no-timing", cell)
    text = capsys.readouterr().out
    assert "Graph-break explorer" in text
    assert re.search(r"\[print\] cell In\[\d+\](#\d+)?, line 3: ", text)  # the break at the cell's own line
    assert "resumes at: g.<resume at" in text  # the code after the print ran as its own graph


def test_compile_failure_shows_message_and_runs_eagerly(ip, capsys):
    cell = 'def h(x):\n    print("eager h")\n    return x + 1\nr = h(torch.ones(2))\n'
    ip.run_cell_magic("compile", "--backend cpp --fullgraph --no-timing", cell)
    text = capsys.readouterr().out
    assert "h: compile failed, ran eagerly" in text and "(fullgraph=True)" in text
    assert text.splitlines().count("eager h") == 1  # the print ran once, eagerly
    assert ip.user_ns["r"].tolist() == [2.0, 2.0]
    assert ip.user_ns["h"].__name__ == "h" and not hasattr(ip.user_ns["h"], "cache")


def test_user_errors_are_not_swallowed(ip):
    cell = "def bad(x):\n    return x + undefined_name\nbad(torch.ones(1))\n"
    result = ip.run_cell(f"%%compile --backend cpp --no-timing\n{cell}")
    assert isinstance(result.error_in_exec, NameError)


def test_register_cell_names_are_readable_and_distinct():
    a = register_cell("x = 1\n", 7)
    b = register_cell("x = 2\n", 7)
    assert a == "<cell In[7]>" and b != a and b.startswith("<cell In[7]")
    assert register_cell("x = 1\n", 7) == a


def test_explain_cell_view_can_rerun_an_edited_function(ip, capsys):
    from toycompiler.widgets.cell_view import CellView
    from toycompiler.widgets.magic import CellSession

    cell = 'def k(x):\n    y = x.sin()\n    print("k")\n    return y\n'
    filename = register_cell(cell, 99)
    exec(compile(cell, filename, "exec"), ip.user_ns)
    session = CellSession(parse_options("--backend cpp --explain --no-timing"), filename)
    session.wrap("k", ip.user_ns["k"])(ip.user_ns["torch"].randn(3))
    view = CellView.build(session)
    assert "graph breaks: 1" in view.summary() and 'print("k")' in view.source_text()
    again = view.rerun(view.source_text().replace('    print("k")\n', ""))
    assert "graph breaks: 0" in again.summary()
    assert "graph breaks: 0" in again.text()


MODULE_CELL = '''\
class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x):
        return torch.relu(self.fc(x))

net = Net()
y = net(torch.randn(2, 4))
'''


def test_module_the_cell_creates_is_compiled(ip, capsys):
    ip.run_cell_magic("compile", "--backend cpp --no-timing", MODULE_CELL)
    text = capsys.readouterr().out
    assert "net: 1 compilation(s), graphs: 1" in text and "== Kernels" in text
    net = ip.user_ns["net"]
    assert net.fc.out_features == 3 and type(net).__name__ == "Net"  # after the cell: the module itself
    assert ip.user_ns["y"].shape == (2, 3)


def test_module_called_without_a_name_says_how_to_compile_it(ip, capsys):
    ip.run_cell_magic("compile", "--backend cpp --no-timing", "torch.nn.Linear(2, 2)(torch.ones(2))\n")
    assert "net = toycompiler.compile(net)" in capsys.readouterr().out


def test_explain_runs_the_function_only_as_the_cell_calls_it(ip, capsys):
    cell = 'def p(x):\n    print("p ran")\n    return x.sin()\np(torch.randn(3))\n'
    ip.run_cell_magic("compile", "--backend cpp --explain", cell)  # timing not turned off by hand
    text = capsys.readouterr().out
    assert text.splitlines().count("p ran") == 1 and "timing of p" not in text


def test_syntax_error_is_one_short_message_at_the_cell_line(ip, capsys):
    result = ip.run_cell("%%compile --backend cpp\ndef f(x)\n    return x\n")
    err = result.error_in_exec
    assert type(err).__name__ == "CellSyntaxError"
    lines = err._render_traceback_()
    n = result.execution_count
    assert re.fullmatch(rf"  Cell In\[{n}\](#\d+)?, line 1", lines[0]) and lines[-1].startswith("SyntaxError: ")
    assert len(lines) == 4 and "def f(x)" in lines[1]
    assert "Traceback" not in capsys.readouterr().out


def test_cell_file_takes_the_number_the_cell_shows(ip):
    result = ip.run_cell("%%compile --backend cpp --no-timing\ndef q(x):\n    return x + 1\nq(torch.ones(1));\n")
    assert ip.user_ns["q"].fn.__code__.co_filename.startswith(f"<cell In[{result.execution_count}]")


def test_trailing_semicolon_hides_the_value(ip, capsys):
    ip.run_cell_magic("compile", "--backend cpp --no-timing", "def s(x):\n    return x * 3\ns(torch.arange(4.0));\n")
    shown = capsys.readouterr().out
    assert "tensor([" not in shown and "s: 1 compilation" in shown
    ip.run_cell_magic("compile", "--backend cpp --no-timing", "def s(x):\n    return x * 3\ns(torch.arange(4.0))\n")
    assert "tensor([0., 3., 6., 9.])" in capsys.readouterr().out


def test_help_works_with_no_cell_body(ip, capsys):
    result = ip.run_cell("%%compile --help")
    assert result.error_in_exec is None and result.error_before_exec is None
    out = capsys.readouterr().out
    assert "usage: %%compile" in out and "cell body is empty" not in out


def test_the_headline_says_what_ran_eagerly_a_frame_or_a_backward(ip, capsys):
    """Every reason explain() gives, not only a forward graph's: here a frame that could not resume after a
    break inside its loop."""
    cell = ("def loop(x):\n    for i in range(2):\n        print(i)\n        x = x + 1\n    return x\n"
            "loop(torch.ones(2))\n")
    ip.run_cell_magic("compile", "--backend cpp --no-timing", cell)
    text = capsys.readouterr().out
    assert re.search(r"loop: .*; ran eagerly: .*frame ran eagerly: can't resume after FOR_ITER", text), text
