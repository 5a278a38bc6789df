"""Progress for long work (compiling, benchmarking): one output line updated in place.

Silent when not interactive (plain Python, tests, CI): nothing is printed, so
saved notebook outputs and nbval comparisons stay free of progress noise.
"""

from __future__ import annotations

import os

from .base import in_live_kernel


class Progress:
    def __init__(self) -> None:
        self.live = in_live_kernel() and not os.environ.get("CI")
        self.handle = None

    def update(self, message: str) -> None:
        if not self.live:
            return
        from IPython.display import display

        data = {"text/plain": message}
        if self.handle is None:
            self.handle = display(data, raw=True, display_id=True)
        else:
            self.handle.update(data, raw=True)

    def done(self) -> None:
        """Blank the line, so the saved output does not keep a stale message."""
        if self.handle is not None:
            self.handle.update({"text/plain": ""}, raw=True)
            self.handle = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.done()
