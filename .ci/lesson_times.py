"""pytest plugin: how long each lesson notebook took to run.

`make test` loads it for the nbval run (PYTHONPATH=.ci, -p lesson_times).
nbval turns each cell into a test item; this adds up the setup, call and
teardown time of every item per notebook, so starting and stopping the
kernel count towards the notebook that needed them.
"""

from collections import defaultdict

_seconds: defaultdict[str, float] = defaultdict(float)


def pytest_runtest_logreport(report):
    _seconds[report.location[0]] += report.duration


def pytest_terminal_summary(terminalreporter):
    if not _seconds:
        return
    terminalreporter.section("time per lesson")
    for path, seconds in _seconds.items():
        terminalreporter.write_line(f"{seconds:8.1f} s  {path}")
    terminalreporter.write_line(f"{sum(_seconds.values()):8.1f} s  in all")
