"""The progress line and bar, and the line that says how a run ended: no worker needed (a run is
followed against test_client's stub)."""

import io
import sys
import types
import unittest

import drover

from .test_client import Stub


def bar_of(line):
    """The bar of a progress line: what is between its two |."""
    return line.split("|")[1]


class TTY(io.StringIO):
    def isatty(self):
        return True


class FormatLineTest(unittest.TestCase):
    # (name, format_line's arguments, the line)
    CASES = [
        (
            "running",
            dict(made=90, total=200, errors=2, made_elsewhere=0, remaining=108, rate=7.25, eta_seconds=15, elapsed=12),
            "stats  46%|#########           | made 90, 2 failed, 0 made elsewhere, 108 remaining of 200 [00:12, 7.2 keys/s, eta 00:15]",
        ),
        (
            "nothing ended yet",
            dict(made=0, total=200, made_elsewhere=0, remaining=200, rate=0.0, elapsed=1),
            "stats   0%|                    | made 0, 0 failed, 0 made elsewhere, 200 remaining of 200 [00:01, 0.0 keys/s, eta ?]",
        ),
        (
            "done",
            dict(made=195, total=200, errors=5, made_elsewhere=0, remaining=0, rate=52.0, final=True),
            "stats 100%|###################x| made 195, 5 failed, 0 made elsewhere, 0 remaining of 200 [52.0 keys/s]",
        ),
        (
            "every key made elsewhere",
            dict(made=0, total=100, made_elsewhere=100, remaining=0, rate=0.0, final=True),
            "stats   0%|                    | made 0, 0 failed, 100 made elsewhere, 0 remaining of 100 [0.0 keys/s]",
        ),
        (
            "half made elsewhere",
            dict(made=25, total=100, made_elsewhere=50, remaining=25, rate=12.5, eta_seconds=2),
            "stats  25%|#####               | made 25, 0 failed, 50 made elsewhere, 25 remaining of 100 [12.5 keys/s, eta 00:02]",
        ),
        (
            "dropped after Ctrl-C",
            dict(made=3, total=1000, errors=1, made_elsewhere=0, dropped=996, remaining=0, rate=2.0, final=True),
            "stats   0%|                    | made 3, 1 failed, 0 made elsewhere, 996 dropped, 0 remaining of 1000 [2.0 keys/s]",
        ),
        (
            "skipped, remaining worked out",
            dict(made=6, total=10, made_elsewhere=1, skipped=2, rate=3.0, eta_seconds=0.4),
            "stats  60%|############        | made 6, 0 failed, 1 made elsewhere, 2 skipped, 1 remaining of 10 [3.0 keys/s, eta 00:00]",
        ),
        (
            "every make failed",
            dict(made=0, total=20, errors=20, made_elsewhere=0, remaining=0, rate=10.0, final=True),
            "stats 100%|xxxxxxxxxxxxxxxxxxxx| made 0, 20 failed, 0 made elsewhere, 0 remaining of 20 [10.0 keys/s]",
        ),
        (
            "no key taken",
            dict(made=0, total=0, made_elsewhere=0, remaining=0, final=True),
            "stats   0%|                    | made 0, 0 failed, 0 made elsewhere, 0 remaining of 0 [? keys/s]",
        ),
        (
            "a table (wait_made): no made elsewhere",
            dict(made=90, total=200, errors=2, rate=7.25, eta_seconds=15),
            "stats  46%|#########           | made 90, 2 failed, 108 remaining of 200 [7.2 keys/s, eta 00:15]",
        ),
    ]

    def test_format(self):
        for name, kw, want in self.CASES:
            with self.subTest(name):
                kw = dict(kw)
                made, total = kw.pop("made"), kw.pop("total")
                line = drover.format_line("stats", made, total, **kw)
                self.assertEqual(line, want)
                bar = bar_of(line)
                ended = made + kw.get("errors", 0)
                if ended < total or total == 0:
                    self.assertIn(" ", bar, "no full bar for a run that did not end every key itself")
                if ended == 0:
                    self.assertNotIn("#", bar, "an empty bar for a run that ended no key itself")
                if made == 0:
                    self.assertNotIn("#", bar, "no # for a run that made nothing")
                if kw.get("errors", 0) == 0:
                    self.assertNotIn("x", bar, "an x only for a failed key")
                self.assertIn("keys/s", line, "the rate is always shown")
                if not kw.get("final"):
                    self.assertRegex(line, r"eta (\?|\d\d:\d\d)\]$", "the ETA while it runs")

    def test_made_nothing_is_never_full(self):
        line = drover.format_line("stats", 0, 100, made_elsewhere=100, remaining=0, rate=0.0, final=True)
        self.assertEqual(bar_of(line), " " * 20)
        self.assertIn("  0%", line)


class SummaryTest(unittest.TestCase):
    def test_format_summary(self):
        cases = [
            ((12, "stats", "done", 200, 195, 5, 0), {}, "populate run 12 of stats: done; made 195, 5 failed, 0 made elsewhere"),
            ((7, "stats", "done", 100, 0, 0, 100), {}, "populate run 7 of stats: done; made 0, 0 failed, 100 made elsewhere"),
            (
                (9, "stats", "interrupted", 1000, 3, 1, 0),
                {"dropped": 996},
                "populate run 9 of stats: interrupted; made 3, 1 failed, 0 made elsewhere, 996 dropped",
            ),
            (
                (10, "stats", "failed", 20, 0, 1, 0),
                {"skipped": 2, "dropped": 17},
                "populate run 10 of stats: failed; made 0, 1 failed, 0 made elsewhere, 2 skipped, 17 dropped",
            ),
            ((3, "grade", "done", 0, 0, 0, 0), {}, "populate run 3 of grade: done; nothing to make: no scheduled key of grade matched"),
            (
                (5, "grade", "done", 0, 0, 0, 0),
                {"reserve_jobs": False},
                "populate run 5 of grade: done; nothing to make: no missing key of grade matched",
            ),
        ]
        for args, kw, want in cases:
            with self.subTest(want):
                self.assertEqual(drover.format_summary(*args, **kw), want)

    def test_a_run_says_how_it_ended(self):
        run = drover.Run.from_json(RUNS[-1])
        self.assertEqual(run.summary, "populate run 12 of stats: done; made 0, 0 failed, 100 made elsewhere")
        empty = drover.Run.from_json(
            {"id": 4, "table": "grade", "state": "done", "total": 0, "options": {"reserve_jobs": False}}
        )
        self.assertEqual(empty.summary, "populate run 4 of grade: done; nothing to make: no missing key of grade matched")


class ProgressLineTest(unittest.TestCase):
    def test_plain_lines_when_not_a_terminal(self):
        out, now = io.StringIO(), [0.0]
        line = drover.ProgressLine("t", out, every=10, clock=lambda: now[0])
        line.update(1, 10)
        now[0] = 1
        line.update(2, 10)  # too soon after the first
        now[0] = 11
        line.update(2, 10)  # changed since the last written line
        now[0] = 30
        line.update(2, 10)  # unchanged
        now[0] = 31
        line.update(10, 10, final=True)
        lines = out.getvalue().splitlines()
        self.assertEqual(
            [ln.split("| ")[1].split(" [")[0] for ln in lines],
            ["made 1, 0 failed, 9 remaining of 10", "made 2, 0 failed, 8 remaining of 10", "made 10, 0 failed, 0 remaining of 10"],
        )
        self.assertNotIn("\r", out.getvalue())

    def test_one_updating_line_on_a_terminal(self):
        out = TTY()
        line = drover.ProgressLine("t", out)
        line.update(1, 10, rate=2.0, eta_seconds=4.5, made_elsewhere=0)
        line.update(10, 10, final=True, made_elsewhere=0, rate=2.0)
        text = out.getvalue()
        self.assertEqual(text.count("\r"), 2)
        self.assertEqual(text.count("\n"), 1)
        self.assertTrue(text.endswith("\n"))
        self.assertIn("made 1, 0 failed, 0 made elsewhere, 9 remaining of 10 [00:00, 2.0 keys/s, eta 00:04]", text)

    def test_a_narrow_terminal_gets_a_line_that_does_not_wrap(self):
        for columns, want in [
            (200, "stats  20%|###x                | made 38, 2 failed, 0 made elsewhere, 160 remaining of 200 [00:00, 41.5 keys/s, eta 00:04]"),
            (100, "stats  20%|#x        | made 38, 2 failed, 0 elsewhere, 160 left of 200 [41.5/s, eta 00:04]"),
            (40, "stats  20%|#x        | made 38, 2 faile"),
        ]:
            with self.subTest(columns=columns):
                out = TTY()
                line = drover.ProgressLine("stats", out, clock=lambda: 0.0, columns=lambda c=columns: c)
                line.update(38, 200, 2, 41.5, 3.9, made_elsewhere=0, remaining=160)
                self.assertEqual(out.getvalue(), "\r" + want)
                self.assertLess(len(want), columns)


class FakeTqdm:
    """Records what a tqdm bar is told."""

    made = []

    def __init__(self, total=None, desc="", unit="", file=None, leave=True, bar_format=None):
        self.total, self.desc, self.n, self.postfix, self.closed = total, desc, 0, "", False
        self.bar_format = bar_format
        FakeTqdm.made.append(self)

    def update(self, n):
        self.n += n

    def refresh(self):
        pass

    def set_postfix_str(self, s, refresh=True):
        self.postfix = s

    def close(self):
        self.closed = True


def with_tqdm(test, installed):
    """Makes tqdm importable as FakeTqdm, or not importable at all, until test ends."""
    auto = types.ModuleType("tqdm.auto")
    auto.tqdm = FakeTqdm
    pkg = types.ModuleType("tqdm")
    pkg.auto = auto
    saved = {k: sys.modules.get(k) for k in ("tqdm", "tqdm.auto")}
    sys.modules.update({"tqdm": pkg if installed else None, "tqdm.auto": auto if installed else None})

    def restore():
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v

    test.addCleanup(restore)


class ProgressBarTest(unittest.TestCase):
    """progress_bar picks tqdm on a terminal when it is installed, the \r line without it, and
    plain lines on anything that is not a terminal."""

    def test_tqdm_on_a_terminal(self):
        with_tqdm(self, True)
        bar = drover.progress_bar("stats", TTY())
        self.assertIsInstance(bar, drover.TqdmBar)
        bar.update(3, 10, errors=1, rate=2.0, made_elsewhere=0)
        fake = FakeTqdm.made[-1]
        self.assertEqual(fake.postfix, "made 3, 1 failed, 0 made elsewhere, 6 remaining, 2.0 keys/s, eta ?")
        self.assertNotIn("{remaining}", fake.bar_format, "the worker's ETA, not tqdm's")
        bar.update(9, 10, errors=1, rate=2.5, made_elsewhere=0, final=True)
        self.assertEqual(
            (fake.desc, fake.total, fake.n, fake.postfix, fake.closed),
            ("stats", 10, 10, "made 9, 1 failed, 0 made elsewhere, 0 remaining, 2.5 keys/s", True),
        )

    def test_tqdm_is_not_full_for_keys_made_elsewhere(self):
        with_tqdm(self, True)
        bar = drover.progress_bar("stats", TTY())
        bar.update(0, 100, made_elsewhere=100, rate=0.0, final=True)
        fake = FakeTqdm.made[-1]
        self.assertEqual((fake.n, fake.total), (0, 100))
        self.assertTrue(fake.postfix.startswith("made 0, 0 failed, 100 made elsewhere"))

    def test_the_line_without_tqdm(self):
        with_tqdm(self, False)
        bar = drover.progress_bar("stats", TTY())
        self.assertIsInstance(bar, drover.ProgressLine)
        self.assertTrue(bar.tty)

    def test_plain_lines_in_a_log_even_with_tqdm(self):
        with_tqdm(self, True)
        bar = drover.progress_bar("stats", io.StringIO())
        self.assertIsInstance(bar, drover.ProgressLine)
        self.assertFalse(bar.tty)


def _run(state, made, errors, elsewhere, remaining, rate, eta):
    return {"id": 12, "table": "stats", "state": state, "total": 100, "made": made, "success_count": made,
            "errors": errors, "made_elsewhere": elsewhere, "skipped": 0, "dropped": 0, "queued": 4,
            "remaining": remaining, "rate": rate, "eta_seconds": eta, "options": {"reserve_jobs": True}, "error_list": []}


# A run whose keys the background made while it waited: the bar moves with the run's own makes
# only, and the run ends having made none.
RUNS = [
    _run("running", 0, 0, 0, 100, 0.0, None),
    _run("running", 0, 0, 60, 40, 0.0, None),
    _run("done", 0, 0, 100, 0, 0.0, None),
]


class FollowTest(unittest.TestCase):
    def follow(self, runs, stream):
        srv = Stub([(200, r, {}) for r in runs])
        self.addCleanup(srv.stop)
        client = drover.Client(srv.url, "tok", timeout=5)
        return client.follow(12, stream=stream, interval=0)

    def test_follow_shows_the_run_moving_and_how_it_ended(self):
        with_tqdm(self, False)  # the \r line, whether tqdm is installed or not
        runs = [
            _run("running", 0, 0, 0, 100, 0.0, None),
            _run("running", 38, 2, 0, 60, 20.0, 3.0),
            _run("done", 95, 5, 0, 0, 25.0, None),
        ]
        out = TTY()
        run = self.follow(runs, out)
        self.assertEqual((run.state, run.made, run.errors), ("done", 95, 5))
        shown = out.getvalue().split("\r")[1:]
        self.assertEqual(len(shown), 3, out.getvalue())
        self.assertIn("  0%|", shown[0])
        self.assertIn("made 0, 0 failed, 0 made elsewhere, 100 remaining of 100", shown[0])
        self.assertIn("0.0 keys/s, eta ?]", shown[0])
        self.assertIn(" 40%|#######x            | made 38, 2 failed, 0 made elsewhere, 60 remaining of 100", shown[1])
        self.assertIn("20.0 keys/s, eta 00:03]", shown[1])
        self.assertIn("100%|", shown[2])
        self.assertTrue(out.getvalue().endswith("\npopulate run 12 of stats: done; made 95, 5 failed, 0 made elsewhere\n"))

    def test_a_run_that_made_nothing_ends_with_an_empty_bar(self):
        out = io.StringIO()
        run = self.follow(RUNS, out)
        self.assertEqual((run.made, run.made_elsewhere), (0, 100))
        lines = out.getvalue().splitlines()
        self.assertEqual(lines[-1], "populate run 12 of stats: done; made 0, 0 failed, 100 made elsewhere")
        last = lines[-2]
        self.assertEqual(bar_of(last), " " * 20, last)
        self.assertIn("made 0, 0 failed, 100 made elsewhere, 0 remaining of 100", last)


if __name__ == "__main__":
    unittest.main()
