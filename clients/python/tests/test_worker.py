"""The client and the function makes against a real populate-worker (see harness.py): keys are
scheduled, then made by populate runs whose River makes call this process's makes, followed
through the table's progress; a make that raises is recorded with its message and stack; errors
are listed, rescheduled and ignored. The worker has no background make workers, so the runs the
tests start are the only makers."""

import io
import unittest

import drover

from . import harness, pipeline

SQUARE = "py_signal_square"


class WorkerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = harness.worker()

    def tearDown(self):
        pipeline.BROKEN.clear()

    def test_the_tables_file_registered_the_python_makes(self):
        tables = {t["name"]: t for t in self.client.tables()}
        self.assertEqual(tables[SQUARE]["make"], "http")
        self.assertTrue(tables[SQUARE]["function_url"].endswith("/make/py_signal_square"))
        self.assertEqual(tables["py_signal_slow"]["primary_key"], ["signal_id"])

    def test_scheduled_keys_are_made_and_a_raising_make_is_an_error_until_rescheduled(self):
        ids = harness.seed(self.client, 6)
        only = {"signal_id": ids}
        pipeline.BROKEN.add(ids[2])
        res = self.client.schedule(SQUARE, only, min_scheduling_interval=0)
        self.assertEqual(res, {"scheduled": 6, "suppressed": False})

        # A run makes them; its progress is followed through the table's.
        self.client.start_populate(SQUARE, only, schedule_jobs=False, suppress_errors=True)
        out = io.StringIO()
        p = self.client.wait_made(SQUARE, only, stream=out, interval=0.1, timeout=60)
        self.assertEqual((p.total, p.remaining, p.jobs["error"], p.pending), (6, 1, 1, 0))
        self.assertIn("100%|################xxxx| made 5, 1 failed, 0 remaining of 6", out.getvalue().splitlines()[-1])

        errors = [j for j in self.client.errors(SQUARE) if j.key["signal_id"] in ids]
        self.assertEqual(len(errors), 1)
        err = errors[0]
        self.assertEqual(err.key, {"signal_id": ids[2]})
        self.assertEqual(err.error_message, f"ValueError: signal {ids[2]} is broken")
        self.assertIn("in square", err.error_stack)
        self.assertIn("raise ValueError", err.error_stack)
        self.assertEqual(self.client.job(SQUARE, err.key_hash).status, "error")

        # Scheduling again leaves an errored key alone, as DataJoint's does.
        self.assertEqual(self.client.schedule(SQUARE, only, min_scheduling_interval=0)["scheduled"], 0)

        pipeline.BROKEN.clear()
        self.assertEqual(self.client.reschedule(err).status, "scheduled")
        # The reschedule's own make waits its grace (RESCHEDULE_GRACE) in River, and yields to a
        # run: a run started after the reschedule makes the key and shows its outcome.
        run = self.client.populate(SQUARE, only, schedule_jobs=False, interval=0.1)
        self.assertEqual((run.state, run.errors, run.made, run.made_elsewhere, run.total), ("done", 0, 1, 0, 1))
        p = self.client.wait_made(SQUARE, only, display_progress=False, interval=0.1, timeout=60)
        self.assertEqual((p.total, p.remaining, p.jobs["error"]), (6, 0, 0))
        self.assertEqual([j for j in self.client.errors(SQUARE) if j.key["signal_id"] in ids], [])

    def test_reschedule_errors_of_a_table(self):
        ids = harness.seed(self.client, 3)
        only = {"signal_id": ids}
        pipeline.BROKEN.update(ids)
        run = self.client.populate(SQUARE, only, suppress_errors=True, min_scheduling_interval=0, interval=0.1)
        self.assertEqual((run.state, run.errors), ("done", 3))
        pipeline.BROKEN.clear()
        self.assertGreaterEqual(self.client.reschedule_errors(SQUARE), 3)
        # The run makes the rescheduled keys itself: their background makes wait out their grace.
        run = self.client.populate(SQUARE, only, schedule_jobs=False, interval=0.1)
        self.assertEqual((run.state, run.errors, run.made, run.total), ("done", 0, 3, 3))
        p = self.client.progress(SQUARE, only)
        self.assertEqual((p.remaining, p.jobs["error"]), (0, 0))

    def test_an_ignored_key_is_left_alone_until_forced(self):
        ids = harness.seed(self.client, 2)
        only = {"signal_id": ids}
        job = self.client.ignore(SQUARE, {"signal_id": ids[0]})  # no job yet
        self.assertEqual((job.status, job.key), ("ignore", {"signal_id": ids[0]}))
        run = self.client.populate(SQUARE, only, min_scheduling_interval=0, interval=0.1)
        self.assertEqual((run.state, run.made), ("done", 1))
        p = self.client.progress(SQUARE, only)
        self.assertEqual((p.remaining, p.jobs["ignore"]), (1, 1))
        self.assertEqual(self.client.schedule(SQUARE, only, force=True, min_scheduling_interval=0)["scheduled"], 1)
        run = self.client.populate(SQUARE, only, schedule_jobs=False, interval=0.1)
        self.assertEqual((run.state, run.made), ("done", 1))
        p = self.client.progress(SQUARE, only)
        self.assertEqual((p.remaining, p.jobs["ignore"]), (0, 0))

    def test_bad_requests_are_errors_naming_the_field(self):
        with self.assertRaises(drover.DroverError) as cm:
            self.client.schedule(SQUARE, {"signal_id": "one"})
        self.assertEqual((cm.exception.status, cm.exception.field), (422, "restriction.signal_id"))
        with self.assertRaises(drover.DroverError) as cm:
            self.client.progress("no_such_table")
        self.assertEqual(cm.exception.status, 404)
        with self.assertRaises(drover.DroverError) as cm:
            drover.Client(self.client.url, "wrong-token").tables()
        self.assertEqual(cm.exception.status, 401)


if __name__ == "__main__":
    unittest.main()
