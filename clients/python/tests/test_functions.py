"""The function-make contract, without a worker: what populate-worker's HTTP calls receive."""

import io
import json
import math
import unittest
import urllib.error
import urllib.request

import drover


def _pipeline() -> drover.Pipeline:
    p = drover.Pipeline()

    @p.computed(target="lab.stats", primary_key=["subject_id", "session"], key_source="SELECT subject_id, session FROM lab.session", upstream=["lab.session"])
    def stats(key):
        if key["session"] == 0:
            raise ValueError(f"session {key['session']} has no data")
        if key["session"] == 1:
            return None
        if key["session"] == 2:
            return {"mean": math.nan}
        if key["session"] == 3:
            return []
        return {"mean": key["session"] / 2}

    @p.computed(target="lab.spikes", name="spike_parts", primary_key=["subject_id"], key_source="SELECT subject_id FROM lab.subject")
    def spikes(key):
        return [{"unit": u} for u in range(3)]

    return p


class FunctionContractTest(unittest.TestCase):
    def setUp(self):
        self.pipeline = _pipeline()
        self.server = self.pipeline.server().start()
        self.addCleanup(self.server.stop)

    def post(self, path, body):
        req = urllib.request.Request(self.server.url + path, data=json.dumps(body).encode(), method="POST")
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, json.load(resp)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    def test_definitions_are_the_workers_tables_file(self):
        defs = self.pipeline.definitions("http://fn:8090/")
        self.assertEqual(
            defs[0],
            {
                "name": "spike_parts",
                "target": "lab.spikes",
                "primary_key": ["subject_id"],
                "key_source": "SELECT subject_id FROM lab.subject",
                "upstream": [],
                "function_url": "http://fn:8090/make/spike_parts",
            },
        )
        self.assertEqual(defs[1]["name"], "stats", "the name defaults to the target without its schema")

    def test_a_make_answers_its_rows(self):
        status, body = self.post("/make/stats", {"table": "stats", "key": {"subject_id": 1, "session": 5}})
        self.assertEqual((status, body), (200, {"rows": [{"mean": 2.5}]}))
        status, body = self.post("/make/spike_parts", {"table": "spike_parts", "key": {"subject_id": 1}})
        self.assertEqual((status, body), (200, {"rows": [{"unit": 0}, {"unit": 1}, {"unit": 2}]}))

    def test_a_raising_make_answers_its_class_message_and_stack(self):
        status, body = self.post("/make/stats", {"table": "stats", "key": {"subject_id": 1, "session": 0}})
        self.assertEqual(status, 500)
        self.assertEqual(body["error"]["class"], "ValueError")
        self.assertEqual(body["error"]["message"], "session 0 has no data")
        self.assertIn('raise ValueError(f"session', body["error"]["stack"])
        self.assertIn("in stats", body["error"]["stack"])

    def test_a_make_that_returns_nothing_usable_is_an_error(self):
        for session, cls in ((1, "TypeError"), (2, "ValueError"), (3, "ValueError")):
            status, body = self.post("/make/stats", {"table": "stats", "key": {"subject_id": 1, "session": session}})
            self.assertEqual((status, body["error"]["class"]), (500, cls), session)

    def test_bad_calls(self):
        self.assertEqual(self.post("/make/nope", {"table": "nope", "key": {}})[0], 404)
        self.assertEqual(self.post("/make/stats", {"table": "other", "key": {}})[0], 400)
        self.assertEqual(self.post("/make/stats", {"table": "stats"})[0], 400)
        self.assertEqual(self.post("/elsewhere", {})[0], 404)

    def test_a_table_is_registered_once(self):
        with self.assertRaises(ValueError):
            self.pipeline.computed(target="other.stats", primary_key=["a"], key_source="SELECT 1 AS a")(lambda key: {})


class ProgressLineTest(unittest.TestCase):
    def test_format(self):
        self.assertEqual(
            drover.format_line("stats", 90, 200, errors=2, rate=7.25, eta_seconds=15, elapsed=12),
            "stats  46%|#########           | 90/200 made, 2 errors [00:12, 7.2 keys/s, ETA 00:15]",
        )
        self.assertEqual(drover.format_line("stats", 0, 0), "stats 100%|####################| 0/0 made [? keys/s, ETA ?]")

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
        self.assertEqual([ln.split("| ")[1].split(" [")[0] for ln in lines], ["1/10 made", "2/10 made", "10/10 made"])
        self.assertNotIn("\r", out.getvalue())

    def test_one_updating_line_on_a_terminal(self):
        class TTY(io.StringIO):
            def isatty(self):
                return True

        out = TTY()
        line = drover.ProgressLine("t", out)
        line.update(1, 10, rate=2.0, eta_seconds=4.5)
        line.update(10, 10, final=True)
        text = out.getvalue()
        self.assertEqual(text.count("\r"), 2)
        self.assertEqual(text.count("\n"), 1)
        self.assertTrue(text.endswith("\n"))
        self.assertIn("1/10 made [00:00, 2.0 keys/s, ETA 00:04]", text)


if __name__ == "__main__":
    unittest.main()
