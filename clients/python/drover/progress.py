"""A progress bar, as DataJoint's ``populate(display_progress=True)`` shows one.

:func:`progress_bar` picks how: in a Jupyter notebook, tqdm's notebook bar (``tqdm.auto``) when
tqdm is installed; on a terminal, tqdm's bar when it is installed, else this module's line
rewritten in place (carriage return); anywhere else (a log file, CI) a plain line written when
something changed, at most every ``every`` seconds, and always at the end, so logs stay readable.
Each shows the keys the run's own makes ended (made or failed) over the keys it took, the counts
made, failed, made elsewhere and remaining (skipped and dropped when there are any), the rate and
the ETA (``eta ?`` until known); :func:`format_summary` is the line that says how a run ended.
tqdm is optional (``pip install drover[progress]``, or Debian's ``python3-tqdm``).
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Any, Callable, Protocol


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def format_counts(
    made: int,
    errors: int = 0,
    made_elsewhere: int | None = None,
    skipped: int = 0,
    dropped: int = 0,
    elsewhere: str = "made elsewhere",
) -> str:
    """What became of a run's keys: ``made 195, 5 failed, 0 made elsewhere``, with the skipped and
    dropped keys when there are any (made_elsewhere None leaves it out: a table, not a run)."""
    parts = [f"made {made}", f"{errors} failed"]
    if made_elsewhere is not None:
        parts.append(f"{made_elsewhere} {elsewhere}")
    if skipped:
        parts.append(f"{skipped} skipped")
    if dropped:
        parts.append(f"{dropped} dropped")
    return ", ".join(parts)


def format_eta(eta_seconds: float | None) -> str:
    """``eta 00:15``, ``eta ?`` while unknown."""
    return "eta " + (_clock(eta_seconds) if eta_seconds is not None else "?")


def format_line(
    label: str,
    made: int,
    total: int,
    errors: int = 0,
    rate: float | None = None,
    eta_seconds: float | None = None,
    elapsed: float | None = None,
    width: int = 20,
    *,
    made_elsewhere: int | None = None,
    skipped: int = 0,
    dropped: int = 0,
    remaining: int | None = None,
    final: bool = False,
    compact: bool = False,
) -> str:
    """``label  46%|#########           | made 90, 2 failed, 0 made elsewhere, 108 remaining of 200
    [00:12, 7.2 keys/s, eta 00:15]``.

    The bar fills with the keys the run's own makes ended over total, a ``#`` for those made and
    an ``x`` for those failed, so it is never full for a run whose keys were made elsewhere,
    skipped or dropped, and has no ``#`` for a run that made nothing. remaining defaults to
    total less every key counted. An ended line (final) has no ETA. compact is the line in fewer
    columns, for a narrow terminal: ``label  46%|####      | made 90, 2 failed, 0 elsewhere, 108
    left of 200 [7.2/s, eta 00:15]``.
    """
    if compact:
        width = min(width, 10)
    ended = made + errors
    frac = min(ended, total) / total if total > 0 else 0.0
    frac = max(frac, 0.0)
    fill = int(frac * width)
    made_fill = min(int(max(made, 0) / total * width), fill) if total > 0 else 0
    bar = "#" * made_fill + "x" * (fill - made_fill) + " " * (width - fill)
    if remaining is None:
        remaining = max(0, total - ended - (made_elsewhere or 0) - skipped - dropped)
    parts = []
    if elapsed is not None and not compact:
        parts.append(_clock(elapsed))
    unit = "/s" if compact else " keys/s"
    parts.append(f"{rate:.1f}{unit}" if rate is not None else f"?{unit}")
    if not final:
        parts.append(format_eta(eta_seconds))
    if compact:
        counts = format_counts(made, errors, made_elsewhere, skipped, dropped, elsewhere="elsewhere")
        return f"{label} {int(frac * 100):3d}%|{bar}| {counts}, {remaining} left of {total} [{', '.join(parts)}]"
    counts = format_counts(made, errors, made_elsewhere, skipped, dropped)
    return f"{label} {int(frac * 100):3d}%|{bar}| {counts}, {remaining} remaining of {total} [{', '.join(parts)}]"


def format_summary(
    run_id: int,
    table: str,
    state: str,
    total: int,
    made: int,
    errors: int = 0,
    made_elsewhere: int = 0,
    skipped: int = 0,
    dropped: int = 0,
    reserve_jobs: bool = True,
) -> str:
    """How a run ended, in a line, as the Go CLI's ``drover populate`` says it:
    ``populate run 12 of session_stats: done; made 195, 5 failed, 0 made elsewhere``, or for a run
    that took no key ``populate run 13 of T: done; nothing to make: no scheduled key of T matched``
    (``missing`` instead of ``scheduled`` without reserve_jobs)."""
    head = f"populate run {run_id} of {table}: {state}; "
    if total == 0:
        which = "scheduled" if reserve_jobs else "missing"
        return head + f"nothing to make: no {which} key of {table} matched"
    return head + format_counts(made, errors, made_elsewhere, skipped, dropped)


class ProgressLine:
    """Writes a progress line to stream (stderr by default), updated in place on a terminal,
    where it is kept shorter than the terminal is wide (the compact line, cut if it must be), lest
    it wrap and each update add a row. columns says how wide the terminal is (0: unknown)."""

    def __init__(
        self,
        label: str,
        stream: IO[str] | None = None,
        every: float = 10.0,
        clock: Callable[[], float] = time.monotonic,
        tty: bool | None = None,
        columns: Callable[[], int] | None = None,
    ) -> None:
        self.label = label
        self.stream = stream if stream is not None else sys.stderr
        self.tty = _isatty(self.stream) if tty is None else tty
        self.columns = columns if columns is not None else (lambda: _columns(self.stream))
        self.every = every
        self.clock = clock
        self.start = clock()
        self._last_counts: tuple[Any, ...] | None = None
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
        *,
        made_elsewhere: int | None = None,
        skipped: int = 0,
        dropped: int = 0,
        remaining: int | None = None,
    ) -> None:
        now = self.clock()

        def line(compact: bool) -> str:
            return format_line(
                self.label,
                made,
                total,
                errors,
                rate,
                eta_seconds,
                now - self.start,
                made_elsewhere=made_elsewhere,
                skipped=skipped,
                dropped=dropped,
                remaining=remaining,
                final=final,
                compact=compact,
            )

        text = line(False)
        if self.tty:
            cols = self.columns()
            if cols > 0 and len(text) >= cols:
                text = line(True)[: cols - 1]
            pad = " " * max(0, self._width - len(text))
            self.stream.write("\r" + text + pad + ("\n" if final else ""))
            self._width = len(text)
            self.stream.flush()
            return
        # Elsewhere: a line when the counts changed (not only the clock), at most every
        # `every` seconds, and the last one always.
        counts = (made, total, errors, made_elsewhere, skipped, dropped, remaining)
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
        *,
        made_elsewhere: int | None = None,
        skipped: int = 0,
        dropped: int = 0,
        remaining: int | None = None,
    ) -> None: ...

    def close(self) -> None: ...


# tqdm's bar with the worker's counts, rate and ETA after it (its postfix) instead of tqdm's own
# rate and ETA, which would count the keys made elsewhere as still to come.
TQDM_FORMAT = "{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}{postfix}]"


class TqdmBar:
    """A tqdm bar driven by the worker's counts: the keys the run's own makes ended (made or
    failed) are its progress, so it is never full for a run whose keys were made elsewhere; the
    counts, the worker's rate and its ETA are shown after it."""

    def __init__(self, tqdm: Callable[..., Any], label: str, stream: IO[str] | None) -> None:
        self.bar = tqdm(total=None, desc=label, unit="key", file=stream, leave=True, bar_format=TQDM_FORMAT)
        self.closed = False

    def update(
        self,
        made: int,
        total: int,
        errors: int = 0,
        rate: float | None = None,
        eta_seconds: float | None = None,
        final: bool = False,
        *,
        made_elsewhere: int | None = None,
        skipped: int = 0,
        dropped: int = 0,
        remaining: int | None = None,
    ) -> None:
        if self.closed:
            return
        if self.bar.total != total:
            self.bar.total = total
        done = made + errors
        if remaining is None:
            remaining = max(0, total - done - (made_elsewhere or 0) - skipped - dropped)
        postfix = [format_counts(made, errors, made_elsewhere, skipped, dropped), f"{remaining} remaining"]
        postfix.append(f"{rate:.1f} keys/s" if rate is not None else "? keys/s")
        if not final:
            postfix.append(format_eta(eta_seconds))
        self.bar.set_postfix_str(", ".join(postfix), refresh=False)
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


def _columns(stream: IO[str]) -> int:
    """How many columns the terminal stream writes to has; 0 when it does not say."""
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        return 0


def _isatty(stream: IO[str]) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False
