"""A progress bar, as DataJoint's ``populate(display_progress=True)`` shows one.

:func:`progress_bar` picks how: in a Jupyter notebook, tqdm's notebook bar (``tqdm.auto``) when
tqdm is installed; on a terminal, tqdm's bar when it is installed, else this module's line
rewritten in place (carriage return); anywhere else (a log file, CI) a plain line written when
something changed, at most every ``every`` seconds, and always at the end, so logs stay readable.
tqdm is optional (``pip install drover[progress]``, or Debian's ``python3-tqdm``).
"""

from __future__ import annotations

import sys
import time
from typing import IO, Any, Callable, Protocol


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
        tty: bool | None = None,
    ) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.tty = _isatty(self.stream) if tty is None else tty
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

    def close(self) -> None:
        """Nothing to release: the final update ends the line."""


class Bar(Protocol):
    """What :meth:`Client.follow` and :meth:`Client.wait_made` drive: a line or a tqdm bar."""

    def update(
        self,
        made: int,
        total: int,
        errors: int = 0,
        rate: float | None = None,
        eta_seconds: float | None = None,
        final: bool = False,
    ) -> None: ...

    def close(self) -> None: ...


class TqdmBar:
    """A tqdm bar driven by the worker's counts: made and errored keys are its progress, the
    errors shown after it."""

    def __init__(self, tqdm: Callable[..., Any], label: str, stream: IO[str] | None) -> None:
        self.bar = tqdm(total=None, desc=label, unit="key", file=stream, leave=True)
        self.closed = False

    def update(
        self,
        made: int,
        total: int,
        errors: int = 0,
        rate: float | None = None,
        eta_seconds: float | None = None,
        final: bool = False,
    ) -> None:
        if self.closed:
            return
        if self.bar.total != total:
            self.bar.total = total
        self.bar.set_postfix_str(f"{made} made, {errors} error{'s' if errors != 1 else ''}" if errors else "", refresh=False)
        done = made + errors
        if done > self.bar.n:
            self.bar.update(done - self.bar.n)
        else:
            self.bar.refresh()
        if final:
            self.close()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.bar.close()


def progress_bar(label: str, stream: IO[str] | None = None) -> Bar:
    """The progress display for label on stream (stderr by default): tqdm in a notebook or on a
    terminal when tqdm is installed, this module's line rewritten in place on a terminal (or in a
    notebook) without it, plain lines elsewhere."""
    notebook = stream is None and _in_notebook()
    if notebook or _isatty(stream if stream is not None else sys.stderr):
        tqdm = _tqdm()
        if tqdm is not None:
            return TqdmBar(tqdm, label, stream)
        return ProgressLine(label, stream, tty=True)
    return ProgressLine(label, stream, tty=False)


def _tqdm() -> Callable[..., Any] | None:
    """tqdm.auto's bar (a notebook widget in Jupyter, text elsewhere), or None without tqdm."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm  # type: ignore[no-any-return]


def _in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel, where stderr is not a terminal but a bar shows."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return shell is not None and "IPKernelApp" in getattr(shell, "config", {})


def _isatty(stream: IO[str]) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False
