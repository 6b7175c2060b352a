"""Populate runs against a real populate-worker: started, followed with a progress line to the
end, read inline with wait, cancelled."""

import io
import time
import unittest

import drover

from . import harness, pipeline

SLOW = "py_signal_slow"


class RunTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.client = harness.worker()

    def tearDown(self):
        pipeline.BROKEN.clear()
        pipeline.SLOW_SECONDS = 0.05

    def test_a_run_is_followed_to_its_end_with_a_progress_line(self):
        ids = harness.seed(self.client, 20)
        pipeline.BROKEN.add(ids[5])
        out = io.StringIO()
        run = self.client.populate(
            SLOW, {"signal_id": ids}, suppress_errors=True, processes=2, display_progress=True, stream=out, interval=0.2
        )
        self.assertEqual((run.table, run.state), (SLOW, "done"))
        self.assertEqual((run.success_count, run.errors, run.remaining), (19, 1, 0))
        self.assertEqual(len(run.error_list), 1)
        self.assertEqual(run.error_list[0].key, {"signal_id": ids[5]})
        self.assertEqual(run.error_list[0].error_message, f"ValueError: signal {ids[5]} is broken")
        self.assertIsNotNone(run.finished_at)
        lines = out.getvalue().splitlines()
        self.assertIn("100%|", lines[-2])
        self.assertIn("made 19, 1 failed, 0 made elsewhere, 0 remaining of 20", lines[-2])
        self.assertEqual(lines[-1], f"populate run {run.id} of {SLOW}: done; made 19, 1 failed, 0 made elsewhere")
        self.assertEqual(self.client.run(run.id).state, "done")
        self.assertEqual(self.client.progress(SLOW, {"signal_id": ids}).remaining, 1)

    def test_wait_returns_a_short_run_finished(self):
        ids = harness.seed(self.client, 3)
        run = self.client.start_populate(SLOW, {"signal_id": ids}, wait=30)
        self.assertEqual((run.state, run.made, run.errors), ("done", 3, 0))

    def test_a_run_fails_at_its_first_error_without_suppress_errors(self):
        ids = harness.seed(self.client, 5)
        pipeline.BROKEN.add(ids[0])
        with self.assertRaises(drover.PopulateError) as cm:
            self.client.populate(SLOW, {"signal_id": ids}, order="original", interval=0.1)
        run = cm.exception.run
        self.assertEqual(str(cm.exception), f"populate run {run.id} of {SLOW} failed: ValueError: signal {ids[0]} is broken")
        self.assertEqual((run.state, run.made, run.errors), ("failed", 0, 1))
        self.assertEqual([e.error_message for e in run.error_list], [f"ValueError: signal {ids[0]} is broken"])

    def start_slow_run(self, keys):
        """A run of keys makes, one at a time, each taking 5 s, once its first make has begun."""
        ids = harness.seed(self.client, keys)
        pipeline.SLOW_SECONDS = 5
        before = pipeline.calls[SLOW]
        run = self.client.start_populate(SLOW, {"signal_id": ids}, suppress_errors=True, order="original")
        self.assertEqual(run.state, "running")
        deadline = time.monotonic() + 30
        while pipeline.calls[SLOW] == before:
            self.assertLess(time.monotonic(), deadline, "the run's first make never started")
            time.sleep(0.02)
        return run, ids

    def test_a_cancelled_run_is_interrupted_and_its_running_make_recorded_as_keyboard_interrupt(self):
        run, ids = self.start_slow_run(10)
        self.client.cancel(run.id)
        run = self.client.follow(run.id, display_progress=False, interval=0.1)

        self.assertEqual((run.state, run.made, run.errors, run.dropped), ("interrupted", 0, 1, 9))
        self.assertEqual([(e.key, e.error_message) for e in run.error_list], [({"signal_id": ids[0]}, "KeyboardInterrupt")])

    def test_ctrl_c_while_following_cancels_the_run(self):
        run, _ = self.start_slow_run(3)

        class CtrlC(io.StringIO):
            def write(self, s):
                raise KeyboardInterrupt

        with self.assertRaises(KeyboardInterrupt):
            self.client.follow(run, stream=CtrlC(), interval=0.1)
        run = self.client.follow(run.id, display_progress=False, interval=0.1)
        self.assertEqual((run.state, run.error_list[0].error_message), ("interrupted", "KeyboardInterrupt"))

if __name__ == "__main__":
    unittest.main()
