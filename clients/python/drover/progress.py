"""A progress line, as DataJoint's ``populate(display_progress=True)`` shows one.

On a terminal the line is rewritten in place (carriage return); anywhere else (a log file, CI) a
plain line is written when something changed, at most every ``every`` seconds, and always at the
end, so logs stay readable.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Callable


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def format_line(
    label: str,
    made: int,
    total: int,
    errors: int = 0,
    rate: float | None = None,
    eta_seconds: float | None = None,
    elapsed: float | None = None,
    width: int = 20,
) -> str:
    """``label  45%|#########           | 90/200 made, 2 errors [00:12, 7.3 keys/s, ETA 00:15]``."""
    done = made + errors
    frac = done / total if total > 0 else 1.0
    frac = min(max(frac, 0.0), 1.0)
    fill = int(frac * width)
    bar = "#" * fill + " " * (width - fill)
    parts = []
    if elapsed is not None:
        parts.append(_clock(elapsed))
    parts.append(f"{rate:.1f} keys/s" if rate is not None else "? keys/s")
    parts.append("ETA " + (_clock(eta_seconds) if eta_seconds is not None else "?"))
    errs = f", {errors} error{'s' if errors != 1 else ''}" if errors else ""
    return f"{label} {int(frac * 100):3d}%|{bar}| {made}/{total} made{errs} [{', '.join(parts)}]"


class ProgressLine:
    """Writes a progress line to stream (stderr by default), updated in place on a terminal."""

    def __init__(
        self,
        label: str,
        stream: IO[str] | None = None,
        every: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", None)
        self.tty = bool(isatty and isatty())
        self.every = every
        self.clock = clock
        self.start = clock()
        self._last_counts: tuple[int, int, int] | None = None
        self._last_write = float("-inf")
        self._width = 0

    def update(
        self,
        made: int,
        total: int,
        errors: int = 0,
        rate: float | None = None,
        eta_seconds: float | None = None,
        final: bool = False,
    ) -> None:
        now = self.clock()
        text = format_line(self.label, made, total, errors, rate, eta_seconds, now - self.start)
        if self.tty:
            pad = " " * max(0, self._width - len(text))
            self.stream.write("\r" + text + pad + ("\n" if final else ""))
            self._width = len(text)
            self.stream.flush()
            return
        # Elsewhere: a line when the counts changed (not only the clock), at most every
        # `every` seconds, and the last one always.
        counts = (made, total, errors)
        if final or (counts != self._last_counts and now - self._last_write >= self.every):
            self.stream.write(text + "\n")
            self.stream.flush()
            self._last_write = now
            self._last_counts = counts
