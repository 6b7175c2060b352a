"""A client of populate-worker's API: schedule keys, start and follow populate runs, read progress,
list, reschedule and ignore errors."""

from __future__ import annotations

import email.utils
import http.client
import json
import random
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import IO, Any, Callable, Iterator
from urllib.parse import quote, urlencode

from .errors import DroverConnectionError, IncompatibleWorker, PopulateError, ProblemError, WaitTimeout
from .progress import format_summary, progress_bar

Restriction = dict[str, Any]

# Job statuses of populate-worker's jobs table, as DataJoint's.
STATUSES = ("scheduled", "reserved", "error", "ignore", "success")
# States of a populate run; every one but running is final.
RUN_STATES = ("running", "done", "interrupted", "failed")

# Answers that mean "not now": rate limited (429), or a proxy or the service unavailable for a
# moment (502, 503, 504).
RETRY_STATUSES = frozenset({429, 502, 503, 504})
# Methods that change nothing more when repeated.
IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


@dataclass
class Job:
    """A row of populate-worker's jobs table (DataJoint's jobs table, field for field)."""

    table_name: str
    key_hash: str
    status: str
    key: dict[str, Any]
    error_message: str | None = None
    error_stack: str | None = None
    user: str = ""
    host: str = ""
    pid: int = 0
    connection_id: int = 0
    timestamp: str = ""
    run_duration: float | None = None
    run_metadata: Any = None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Job:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass
class KeyFailure:
    """A key that failed in a populate run: its key and "<Class>: <message>"."""

    key: dict[str, Any]
    error_message: str


@dataclass
class Run:
    """A populate run (GET /v1/populate-runs/{id})."""

    id: int
    table: str
    state: str
    made: int = 0
    errors: int = 0
    remaining: int = 0
    error_list: list[KeyFailure] = field(default_factory=list)
    rate: float | None = None
    eta_seconds: float | None = None
    created_at: str | None = None
    finished_at: str | None = None
    # The run's keys when the worker says (made + errors + remaining otherwise); those another
    # make made (another run's, or a background make already running when the run reached the
    # key), counted neither as the run's
    # success nor its error, as DataJoint counts a call's own makes; those that needed no make or
    # failed under another make; and those a stopped run never reached.
    total: int = 0
    made_elsewhere: int = 0
    skipped: int = 0
    dropped: int = 0
    raw: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Run:
        made, errors, remaining = d.get("made") or 0, d.get("errors") or 0, d.get("remaining") or 0
        return cls(
            id=d["id"],
            table=d.get("table", ""),
            state=d["state"],
            made=made,
            errors=errors,
            remaining=remaining,
            total=d.get("total", made + errors + remaining),
            made_elsewhere=d.get("made_elsewhere") or 0,
            skipped=d.get("skipped") or 0,
            dropped=d.get("dropped") or 0,
            error_list=[KeyFailure(e.get("key") or {}, e.get("error_message") or "") for e in d.get("error_list") or []],
            rate=d.get("rate"),
            eta_seconds=d.get("eta_seconds"),
            created_at=d.get("created_at"),
            finished_at=d.get("finished_at"),
            raw=d,
        )

    @property
    def finished(self) -> bool:
        return self.state != "running"

    @property
    def success_count(self) -> int:
        """DataJoint's populate() name for the keys made."""
        return self.made

    @property
    def summary(self) -> str:
        """How the run ended (or stands), in a line: ``populate run 12 of session_stats: done;
        made 195, 5 failed, 0 made elsewhere`` (skipped and dropped keys when there are any), or
        ``…: done; nothing to make: no scheduled key of session_stats matched``."""
        options = self.raw.get("options") or {}
        return format_summary(
            self.id,
            self.table,
            self.state,
            self.total,
            self.made,
            self.errors,
            self.made_elsewhere,
            self.skipped,
            self.dropped,
            reserve_jobs=options.get("reserve_jobs", True) is not False,
        )


@dataclass
class Progress:
    """GET /v1/tables/{name}/progress: key_source's keys, those not yet in the target, jobs by status."""

    table: str
    total: int
    remaining: int
    jobs: dict[str, int]

    @property
    def made(self) -> int:
        return self.total - self.remaining

    @property
    def pending(self) -> int:
        """Keys a worker will still make without being asked: scheduled or reserved."""
        return self.jobs.get("scheduled", 0) + self.jobs.get("reserved", 0)


class Client:
    """populate-worker's API at url (e.g. http://127.0.0.1:8085), with a bearer token.

    A call that could not reach the worker, or got 429, 502, 503 or 504, is tried again up to
    ``retries`` times, after ``backoff`` seconds doubling each time (with jitter, at most
    ``max_backoff``), or after the answer's Retry-After when it gives one (up to
    ``max_retry_after``; a longer one is raised at once). Only calls that are safe to repeat are
    retried after they may have reached the worker: reads and the calls that are idempotent
    (schedule, cancel, reschedule, ignore, cleanup). Starting a populate run is retried only when
    the connection was refused or the answer was 429, since the worker then did nothing.
    """

    def __init__(
        self,
        url: str,
        token: str,
        timeout: float = 30.0,
        *,
        retries: int = 4,
        backoff: float = 0.5,
        max_backoff: float = 10.0,
        max_retry_after: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout
        self.retries = retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.max_retry_after = max_retry_after
        self._sleep = sleep

    # --- plumbing

    def _call(
        self, method: str, path: str, body: Any = None, timeout: float | None = None, idempotent: bool | None = None
    ) -> tuple[int, Any]:
        """One API call, retried as the class says; returns the status and the decoded answer."""
        safe = method in IDEMPOTENT_METHODS if idempotent is None else idempotent
        url = self.url + path
        attempt = 0
        while True:
            attempt += 1
            last = attempt > self.retries
            try:
                return self._once(method, url, body, timeout or self.timeout)
            except urllib.error.HTTPError as e:
                err = _problem(e)
                if last or e.code not in RETRY_STATUSES or not (safe or e.code == 429):
                    raise err from None
                delay = _retry_after(e.headers.get("Retry-After"))
                if delay is None:
                    delay = self._backoff(attempt)
                elif delay > self.max_retry_after:
                    raise err from None
            except (urllib.error.URLError, OSError, http.client.HTTPException) as e:
                reason = e.reason if isinstance(e, urllib.error.URLError) else e
                refused = isinstance(reason, ConnectionRefusedError)
                if last or not (safe or refused):
                    raise DroverConnectionError(method, url, reason if isinstance(reason, BaseException) else e, attempt) from e
                delay = self._backoff(attempt)
            self._sleep(delay)

    def _once(self, method: str, url: str, body: Any, timeout: float) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(url, data=data, method=method)
        req.add_header("Authorization", "Bearer " + self.token)
        req.add_header("Accept", "application/json, application/problem+json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
            return resp.status, json.loads(raw) if raw else None

    def _backoff(self, attempt: int) -> float:
        """Exponential backoff with equal jitter: between half and all of backoff * 2^(attempt-1)."""
        d = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
        return d / 2 + random.uniform(0, d / 2)

    @staticmethod
    def _t(table: str) -> str:
        return quote(table, safe="")

    # --- tables and scheduling

    def tables(self) -> list[dict[str, Any]]:
        """The computed tables the worker populates, with their make kind (go, three-part, http)."""
        return self._call("GET", "/v1/tables")[1]["items"]

    def table(self, name: str) -> dict[str, Any]:
        """One computed table: its definition, its make kind and where the definition comes from
        (``source``: code, file or api)."""
        return self._call("GET", f"/v1/tables/{self._t(name)}")[1]

    def define_table(self, definition: dict[str, Any]) -> tuple[dict[str, Any], bool]:
        """PUT /v1/tables/{name}: defines the computed table ``definition`` describes (a
        TABLES_FILE entry: :meth:`ComputedTable.definition`), or replaces its definition. Every
        replica of the worker populates it within moments, without a restart. It takes a token of
        the worker's admin scope (POPULATE_WORKER_ADMIN_TOKENS). Returns the table as the worker
        shows it and whether it is new; a definition the worker refuses raises ProblemError
        naming the field (422)."""
        status, table = self._call("PUT", f"/v1/tables/{self._t(definition['name'])}", definition)
        return table, status == 201

    def retire_table(self, name: str) -> None:
        """DELETE /v1/tables/{name}: no replica schedules or makes the table's keys any more; its
        jobs and rows stay. Admin scope, as :meth:`define_table`."""
        self._call("DELETE", f"/v1/tables/{self._t(name)}")

    def schedule(
        self,
        table: str,
        restriction: Restriction | None = None,
        force: bool = False,
        min_scheduling_interval: float | None = None,
    ) -> dict[str, Any]:
        """schedule_jobs: every key of key_source (in restriction) not in the target gets a
        scheduled job, which the worker's River workers make. Answers {scheduled, suppressed}
        (suppressed when the table was scheduled less than min_scheduling_interval ago)."""
        body: dict[str, Any] = {"force": force}
        if restriction:
            body["restriction"] = restriction
        if min_scheduling_interval is not None:
            body["min_scheduling_interval"] = min_scheduling_interval
        return self._call("POST", f"/v1/tables/{self._t(table)}/schedule", body, idempotent=True)[1]

    def progress(self, table: str, restriction: Restriction | None = None) -> Progress:
        """How many keys key_source has (in restriction), how many are not made yet, and the
        table's jobs by status."""
        q = urlencode({k: json.dumps(v) for k, v in (restriction or {}).items()})
        d = self._call("GET", f"/v1/tables/{self._t(table)}/progress" + ("?" + q if q else ""))[1]
        return Progress(table=d.get("table", table), total=d["total"], remaining=d["remaining"], jobs=d["jobs"])

    def cleanup(self, table: str) -> int:
        """cleanup_jobs now: removes jobs whose key left key_source or whose target row is gone."""
        return self._call("POST", f"/v1/tables/{self._t(table)}/cleanup", {}, idempotent=True)[1]["removed"]

    # --- populate runs

    def start_populate(
        self,
        table: str,
        restriction: Restriction | None = None,
        *,
        reserve_jobs: bool = True,
        schedule_jobs: bool = True,
        suppress_errors: bool = False,
        order: str | None = None,
        max_calls: int | None = None,
        processes: int = 1,
        min_scheduling_interval: float | None = None,
        wait: float | None = None,
    ) -> Run:
        """Starts a populate run of table and returns it (running), or, with wait (seconds), the
        finished run when it ends within wait. The run goes on in the worker whatever the client
        does; :meth:`follow` watches it, :meth:`cancel` stops it."""
        body: dict[str, Any] = {
            "reserve_jobs": reserve_jobs,
            "schedule_jobs": schedule_jobs,
            "suppress_errors": suppress_errors,
            "processes": processes,
        }
        if restriction:
            body["restriction"] = restriction
        if order is not None:
            body["order"] = order
        if max_calls is not None:
            body["max_calls"] = max_calls
        if min_scheduling_interval is not None:
            body["min_scheduling_interval"] = min_scheduling_interval
        path = f"/v1/tables/{self._t(table)}/populate"
        timeout = None
        if wait is not None:
            path += "?" + urlencode({"wait": _seconds(wait)})
            timeout = self.timeout + wait
        d = self._call("POST", path, body, timeout=timeout)[1]
        if not isinstance(d, dict) or "id" not in d:
            raise IncompatibleWorker("this populate-worker answered the populate call inline, without a run: it has no populate runs")
        return Run.from_json(d)

    def run(self, run_id: int) -> Run:
        """The populate run run_id as it is now."""
        return Run.from_json(self._call("GET", f"/v1/populate-runs/{int(run_id)}")[1])

    def cancel(self, run_id: int) -> Run:
        """Stops a running populate run; its in-flight makes are recorded as KeyboardInterrupt."""
        return Run.from_json(self._call("POST", f"/v1/populate-runs/{int(run_id)}/cancel", {}, idempotent=True)[1])

    def follow(
        self,
        run: Run | int,
        display_progress: bool = True,
        stream: IO[str] | None = None,
        interval: float = 1.0,
        cancel_on_interrupt: bool = True,
    ) -> Run:
        """Polls a run until it finishes and returns it, showing a progress line on stream
        (stderr) when display_progress: a bar of the keys the run's own makes ended (made or
        failed) over the keys it took, the counts made, failed, made elsewhere and remaining, the
        rate and the ETA; then :attr:`Run.summary`, the line that says how it ended. Ctrl-C
        cancels the run, as it stops DataJoint's populate, unless cancel_on_interrupt is False."""
        cur = run if isinstance(run, Run) else self.run(run)
        line = progress_bar(cur.table, stream) if display_progress else None
        try:
            while True:
                if line is not None:
                    line.update(
                        cur.made,
                        cur.total,
                        cur.errors,
                        cur.rate,
                        cur.eta_seconds,
                        final=cur.finished,
                        made_elsewhere=cur.made_elsewhere,
                        skipped=cur.skipped,
                        dropped=cur.dropped,
                        remaining=cur.remaining,
                    )
                if cur.finished:
                    if line is not None:
                        line.close()
                        out = stream if stream is not None else sys.stderr
                        out.write(cur.summary + "\n")
                        out.flush()
                    return cur
                time.sleep(interval)
                cur = self.run(cur.id)
        except KeyboardInterrupt:
            if cancel_on_interrupt:
                self.cancel(cur.id)
            raise
        finally:
            if line is not None:
                line.close()

    def populate(
        self,
        table: str,
        restriction: Restriction | None = None,
        *,
        display_progress: bool = False,
        stream: IO[str] | None = None,
        interval: float = 1.0,
        **opts: Any,
    ) -> Run:
        """DataJoint's populate(): starts a run (see :meth:`start_populate` for the options),
        follows it to the end and returns the ended run (run.success_count, run.error_list).
        With suppress_errors False a make that raises stops the run, which ends failed, and
        PopulateError is raised with it, as DataJoint's populate raises the make's error."""
        run = self.start_populate(table, restriction, **opts)
        run = self.follow(run, display_progress=display_progress, stream=stream, interval=interval)
        if run.state == "failed":
            raise PopulateError(run)
        return run

    def wait_made(
        self,
        table: str,
        restriction: Restriction | None = None,
        display_progress: bool = True,
        stream: IO[str] | None = None,
        interval: float = 1.0,
        timeout: float | None = None,
    ) -> Progress:
        """Follows a table (in restriction) while the worker's River workers make its scheduled
        keys, until none is scheduled or reserved, with the same progress line as :meth:`follow`
        (the rate measured here). Returns the last progress."""
        start = time.monotonic()
        p = self.progress(table, restriction)
        line = progress_bar(table, stream) if display_progress else None
        first_made = p.made
        try:
            while True:
                done = p.pending == 0
                if line is not None:
                    elapsed = time.monotonic() - start
                    rate = (p.made - first_made) / elapsed if elapsed > 0 and p.made > first_made else None
                    eta = p.pending / rate if rate else None
                    line.update(p.made, p.total, p.jobs.get("error", 0), rate, eta, final=done)
                if done:
                    return p
                if timeout is not None and time.monotonic() - start > timeout:
                    raise WaitTimeout(f"{table}: {p.pending} keys still scheduled or reserved after {timeout} s")
                time.sleep(interval)
                p = self.progress(table, restriction)
        finally:
            if line is not None:
                line.close()

    # --- jobs: errors, reschedule, ignore

    def jobs(self, table: str | None = None, status: str | None = None, limit: int = 100) -> Iterator[Job]:
        """Jobs of table (or every table) in status, every page."""
        params: dict[str, Any] = {"limit": limit}
        if table is not None:
            params["table"] = table
        if status is not None:
            params["status"] = status
        while True:
            page = self._call("GET", "/v1/jobs?" + urlencode(params))[1]
            for item in page["items"]:
                yield Job.from_json(item)
            cursor = page.get("next_cursor")
            if not cursor:
                return
            params["cursor"] = cursor

    def errors(self, table: str | None = None) -> list[Job]:
        """DataJoint's (schema.jobs & 'status="error"'): the errored jobs with key, message, stack."""
        return list(self.jobs(table, "error"))

    def job(self, table: str, key_hash: str) -> Job:
        """One job by its table and key hash."""
        return Job.from_json(self._call("GET", self._job_path((table, key_hash)))[1])

    def _job_path(self, job: Job | tuple[str, str]) -> str:
        table, key_hash = (job.table_name, job.key_hash) if isinstance(job, Job) else job
        return f"/v1/jobs/{self._t(table)}/{quote(key_hash, safe='')}"

    def reschedule(self, job: Job | tuple[str, str]) -> Job:
        """Schedules an errored or ignored job again; a worker makes it."""
        return Job.from_json(self._call("POST", self._job_path(job) + "/reschedule", {}, idempotent=True)[1])

    def reschedule_errors(self, table: str) -> int:
        """Reschedules every errored job of table; returns how many."""
        jobs = self.errors(table)
        for j in jobs:
            self.reschedule(j)
        return len(jobs)

    def ignore(self, table: str, key: dict[str, Any]) -> Job:
        """DataJoint's jobs.ignore(key): the key (in key_source) is set aside, whether it has a
        job yet or not; schedule_jobs leaves it alone unless forced."""
        return Job.from_json(self._call("POST", f"/v1/tables/{self._t(table)}/ignore", {"key": key}, idempotent=True)[1])

    def ignore_job(self, job: Job | tuple[str, str]) -> Job:
        """Ignores a job by its table and key hash."""
        return Job.from_json(self._call("POST", self._job_path(job) + "/ignore", {}, idempotent=True)[1])


def _problem(e: urllib.error.HTTPError) -> ProblemError:
    """The error for an error answer, from its problem+json document when it is one."""
    raw = e.read()
    try:
        doc = json.loads(raw)
    except ValueError:
        doc = None
    if isinstance(doc, dict):
        return ProblemError(
            e.code,
            doc.get("detail") or doc.get("title") or raw[:500].decode(errors="replace"),
            doc.get("type", ""),
            doc.get("field", ""),
            doc,
            doc.get("title", ""),
        )
    return ProblemError(e.code, raw[:500].decode(errors="replace") or str(e.reason))


def _retry_after(value: str | None) -> float | None:
    """Retry-After's seconds: a number of seconds or an HTTP date; None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _seconds(s: float) -> str:
    return str(int(s)) if float(s).is_integer() else str(s)
