"""The errors the library raises: every one is a :class:`DroverError`, so ``except
drover.DroverError`` catches whatever a call to populate-worker can raise."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import Run


class DroverError(Exception):
    """Base of every error this library raises."""


class DroverConnectionError(DroverError, ConnectionError):
    """populate-worker could not be reached, or did not answer in time, after every retry.
    ``url`` is what was called and ``reason`` the last underlying error (a ``URLError``'s
    reason, an ``OSError``, a ``TimeoutError``), also the exception's ``__cause__``."""

    def __init__(self, method: str, url: str, reason: BaseException, attempts: int = 1) -> None:
        self.method = method
        self.url = url
        self.reason = reason
        self.attempts = attempts
        tries = f" (after {attempts} attempts)" if attempts > 1 else ""
        super().__init__(f"{method} {url}: {reason}{tries}")


class ProblemError(DroverError):
    """populate-worker answered with an error status. Its problem+json document (RFC 9457) is
    read into ``type``, ``title``, ``status``, ``detail`` and ``field`` (the request field at
    fault, e.g. ``restriction.subject_id``); ``body`` is the whole document, or None when the
    answer was not one (then ``detail`` is the start of the answer)."""

    def __init__(
        self,
        status: int,
        detail: str,
        type_: str = "",
        field_: str = "",
        body: Any = None,
        title: str = "",
    ) -> None:
        self.status = status
        self.detail = detail
        self.type = type_
        self.field = field_
        self.title = title
        self.body = body
        where = f" ({field_})" if field_ else ""
        super().__init__(f"HTTP {status}{where}: {detail}")


class IncompatibleWorker(DroverError):
    """populate-worker answered in a way this library does not understand: an older version."""


class PopulateError(DroverError):
    """A populate run that ended failed: a make raised and suppress_errors was off, so the run
    took no more keys, as DataJoint's populate raises the make's error. ``run`` is the run."""

    def __init__(self, run: Run) -> None:
        self.run = run
        first = run.error_list[0].error_message if run.error_list else "a make failed"
        super().__init__(f"populate run {run.id} of {run.table} failed: {first}")


class WaitTimeout(DroverError, TimeoutError):
    """:meth:`Client.wait_made` gave up before the table's scheduled keys were made."""
