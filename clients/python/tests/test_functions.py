"""The function-make contract, without a worker: what populate-worker's HTTP calls receive.
The progress line and bar are tested in test_progress."""

import json
import math
import time
import unittest
import urllib.error
import urllib.request

import drover


def _pipeline() -> drover.Pipeline:
    p = drover.Pipeline()

    @p.computed(
        target="lab.stats",
        primary_key=["subject_id", "session"],
        key_source="SELECT subject_id, session FROM lab.session",
        upstream=["lab.session"],
        secret_env="LAB_SECRET",
    )
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


SECRET = "s3cret"


def post(server, path, body, signature=None):
    """POSTs body as the worker does, signed with SECRET unless signature says otherwise ("" for
    no header); returns the status, the decoded answer and its content type."""
    raw = json.dumps(body).encode()
    req = urllib.request.Request(server.url + path, data=raw, method="POST")
    req.add_header("Content-Type", "application/json")
    if signature is None:
        signature = drover.sign(SECRET, raw)
    if signature:
        req.add_header("Drover-Signature", signature)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.load(resp), resp.headers["Content-Type"]
    except urllib.error.HTTPError as e:
        return e.code, json.load(e), e.headers["Content-Type"]


class FunctionContractTest(unittest.TestCase):
    def setUp(self):
        self.pipeline = _pipeline()
        self.server = self.pipeline.server(secret=SECRET).start()
        self.addCleanup(self.server.stop)

    def post(self, path, body):
        return post(self.server, path, body)[:2]

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
        self.assertEqual(defs[1]["function_secret_env"], "LAB_SECRET")

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


class SignatureTest(unittest.TestCase):
    KEY = {"table": "stats", "key": {"subject_id": 1, "session": 5}}

    def setUp(self):
        self.pipeline = _pipeline()
        self.calls = 0
        self.pipeline.table("stats").make = self.counted(self.pipeline.table("stats").make)
        self.server = self.pipeline.server(secret=[SECRET, "old"]).start()
        self.addCleanup(self.server.stop)

    def counted(self, make):
        def wrapped(key):
            self.calls += 1
            return make(key)

        return wrapped

    def test_the_workers_signature(self):
        # The same value populate-worker's signing package computes (its TestVerify).
        body = b'{"table":"t","key":{"id":1}}'
        want = "t=1700000000,v1=b5ef63e1fe7ae205144c1f1de28d7cba0e8cce8715190de365ad651a7b4eaff1"
        self.assertEqual(drover.sign(SECRET, body, timestamp=1_700_000_000), want)
        drover.verify(SECRET, want, body, now=1_700_000_000 + 299)
        with self.assertRaises(drover.SignatureError) as cm:
            drover.verify(SECRET, want, body, now=1_700_000_000 + 301)
        self.assertEqual(cm.exception.reason, "stale")
        self.assertIsInstance(cm.exception, drover.DroverError)

    def test_a_signed_call_is_made(self):
        self.assertEqual(post(self.server, "/make/stats", self.KEY)[:2], (200, {"rows": [{"mean": 2.5}]}))
        # Signed with the old secret too, as the worker does while a secret is rotated.
        raw = json.dumps(self.KEY).encode()
        self.assertEqual(post(self.server, "/make/stats", self.KEY, drover.sign(["new", "old"], raw))[0], 200)
        self.assertEqual(self.calls, 2)

    def test_unsigned_badly_signed_and_stale_calls_are_refused_before_the_make(self):
        raw = json.dumps(self.KEY).encode()
        for name, signature, reason in (
            ("unsigned", "", "unsigned call"),
            ("other secret", drover.sign("guess", raw), "bad signature"),
            ("other body", drover.sign(SECRET, b"{}"), "bad signature"),
            ("malformed", "Bearer " + SECRET, "bad signature"),
            # 10 s past the 300 s tolerance: sign() truncates its timestamp to whole seconds, so
            # +301 was sometimes 300.x ahead by the time the server checked, and accepted.
            ("stale", drover.sign(SECRET, raw, timestamp=time.time() - 310), "stale signature"),
            ("ahead", drover.sign(SECRET, raw, timestamp=time.time() + 310), "stale signature"),
        ):
            status, body, ctype = post(self.server, "/make/stats", self.KEY, signature)
            self.assertEqual((status, ctype), (401, "application/problem+json"), name)
            self.assertEqual((body["status"], body["title"]), (401, "Unauthorized"), name)
            self.assertIn(reason, body["detail"], name)
        self.assertEqual(self.calls, 0, "no make ran")

    def test_a_server_needs_a_secret_unless_insecure(self):
        with self.assertRaises(ValueError) as cm:
            self.pipeline.server(secret=[])
        self.assertIn("DROVER_FUNCTION_SECRET", str(cm.exception))
        srv = self.pipeline.server(secret=[], insecure=True).start()
        self.addCleanup(srv.stop)
        self.assertEqual(post(srv, "/make/stats", self.KEY, "")[0], 200)


if __name__ == "__main__":
    unittest.main()
