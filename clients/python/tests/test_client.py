"""The client's errors and retries, against a stub of populate-worker that answers what each
test scripts: no worker needed."""

import json
import socket
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import drover


class Stub(ThreadingHTTPServer):
    """Answers each request with the next scripted (status, body, headers) and records it."""

    daemon_threads = True

    def __init__(self, answers):
        self.answers = list(answers)
        self.requests = []
        self.bodies = []
        super().__init__(("127.0.0.1", 0), _StubHandler)
        threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}"

    def stop(self):
        self.shutdown()
        self.server_close()


class _StubHandler(BaseHTTPRequestHandler):
    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw_body = self.rfile.read(length)
        self.server.requests.append((self.command, self.path))
        self.server.bodies.append(raw_body)
        status, body, headers = self.server.answers.pop(0)
        raw = json.dumps(body).encode() if not isinstance(body, bytes) else body
        self.send_response(status)
        for k, v in {"Content-Type": "application/json", **headers}.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_POST = do_PUT = do_DELETE = answer

    def log_message(self, *args):
        pass


PROBLEM = {"type": "https://drover.dev/problems/validation", "title": "Unprocessable", "status": 422,
           "detail": "signal_id: want an integer", "field": "restriction.signal_id"}
PROGRESS = {"table": "t", "total": 3, "remaining": 1, "jobs": {"scheduled": 1}}
RUN = {"id": 7, "table": "t", "state": "running"}


class ClientTest(unittest.TestCase):
    def stub(self, *answers):
        srv = Stub(answers)
        self.addCleanup(srv.stop)
        self.sleeps = []
        return srv, drover.Client(srv.url, "tok", timeout=5, sleep=self.sleeps.append)

    def test_a_problem_is_raised_with_its_fields(self):
        _, client = self.stub((422, PROBLEM, {"Content-Type": "application/problem+json"}))
        with self.assertRaises(drover.ProblemError) as cm:
            client.schedule("t", {"signal_id": "one"})
        e = cm.exception
        self.assertIsInstance(e, drover.DroverError)
        self.assertEqual((e.status, e.type, e.title, e.field), (422, PROBLEM["type"], "Unprocessable", "restriction.signal_id"))
        self.assertEqual(e.detail, "signal_id: want an integer")
        self.assertEqual(str(e), "HTTP 422 (restriction.signal_id): signal_id: want an integer")
        self.assertEqual(self.sleeps, [], "a refused request is not retried")

    def test_an_answer_that_is_not_a_problem(self):
        _, client = self.stub((500, b"<html>oops</html>", {"Content-Type": "text/html"}))
        with self.assertRaises(drover.ProblemError) as cm:
            client.tables()
        self.assertEqual((cm.exception.status, cm.exception.detail, cm.exception.body), (500, "<html>oops</html>", None))

    def test_reads_are_retried_with_growing_backoff_and_retry_after(self):
        srv, client = self.stub(
            (503, {"title": "Unavailable"}, {}),
            (502, b"bad gateway", {}),
            (429, {"title": "Too Many Requests"}, {"Retry-After": "7"}),
            (504, {}, {}),
            (200, PROGRESS, {}),
        )
        p = client.progress("t")
        self.assertEqual((p.total, p.remaining), (3, 1))
        self.assertEqual(len(srv.requests), 5)
        self.assertEqual(self.sleeps[2], 7.0, "Retry-After honoured")
        # Backoff doubles (with jitter: between half and all of 0.5, 1, 2, 4 s).
        for sleep, step in ((self.sleeps[0], 0.5), (self.sleeps[1], 1.0), (self.sleeps[3], 4.0)):
            self.assertTrue(step / 2 <= sleep <= step, (sleep, step))

    def test_retries_end(self):
        srv, client = self.stub(*[(503, {"title": "Unavailable", "status": 503}, {})] * 5)
        with self.assertRaises(drover.ProblemError) as cm:
            client.tables()
        self.assertEqual(cm.exception.status, 503)
        self.assertEqual((len(srv.requests), len(self.sleeps)), (5, 4))

    def test_a_long_retry_after_is_raised_at_once(self):
        srv, client = self.stub((503, {"title": "Unavailable"}, {"Retry-After": "3600"}))
        with self.assertRaises(drover.ProblemError):
            client.tables()
        self.assertEqual(self.sleeps, [])

    def test_starting_a_run_is_not_repeated_after_it_may_have_reached_the_worker(self):
        srv, client = self.stub((502, b"bad gateway", {}))
        with self.assertRaises(drover.ProblemError):
            client.start_populate("t")
        self.assertEqual(len(srv.requests), 1)
        # 429: the worker did nothing, so the same call is made again.
        srv, client = self.stub((429, {}, {"Retry-After": "0"}), (202, RUN, {}))
        self.assertEqual(client.start_populate("t").id, 7)
        self.assertEqual(len(srv.requests), 2)

    def test_idempotent_calls_are_retried(self):
        srv, client = self.stub((503, {}, {}), (200, {"scheduled": 2, "suppressed": False}, {}))
        self.assertEqual(client.schedule("t")["scheduled"], 2)
        self.assertEqual([r[0] for r in srv.requests], ["POST", "POST"])

    def test_connection_refused_is_retried_then_raised(self):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        sleeps = []
        client = drover.Client(f"http://127.0.0.1:{port}", "tok", retries=2, sleep=sleeps.append)
        for call in (client.tables, lambda: client.start_populate("t")):
            sleeps.clear()
            with self.assertRaises(drover.DroverConnectionError) as cm:
                call()
            e = cm.exception
            self.assertIsInstance(e, drover.DroverError)
            self.assertIsInstance(e, ConnectionError)
            self.assertIsInstance(e.reason, ConnectionRefusedError)
            self.assertEqual((e.attempts, len(sleeps)), (3, 2), "refused: nothing was sent, so even a run start is retried")
            self.assertIn(f"127.0.0.1:{port}", str(e))

    def test_a_pipeline_registers_its_tables(self):
        pipeline = drover.Pipeline()

        @pipeline.computed(target="lab.stats", primary_key=["k"], key_source="SELECT k FROM lab.src", auto_schedule=False)
        def stats(key):
            return {"v": 1}

        srv, client = self.stub((201, {"name": "stats", "source": "api"}, {}), (200, {"name": "stats", "source": "api"}, {}))
        self.assertEqual(pipeline.register(client, "http://makes:8090"), [("stats", True)])
        self.assertEqual(pipeline.register(client, "http://makes:8090"), [("stats", False)], "200: replaced")
        self.assertEqual(srv.requests, [("PUT", "/v1/tables/stats")] * 2)
        sent = json.loads(srv.bodies[0])
        self.assertEqual(sent["function_url"], "http://makes:8090/make/stats")
        self.assertIs(sent["auto_schedule"], False)

    def test_a_refused_definition_names_its_field(self):
        problem = {"title": "Unprocessable Entity", "status": 422, "detail": "target: relation \"lab.nope\" does not exist", "field": "target"}
        _, client = self.stub((422, problem, {"Content-Type": "application/problem+json"}))
        with self.assertRaises(drover.ProblemError) as cm:
            client.define_table({"name": "t", "target": "lab.nope"})
        self.assertEqual((cm.exception.status, cm.exception.field), (422, "target"))

    def test_retire_table(self):
        srv, client = self.stub((204, b"", {}))
        self.assertIsNone(client.retire_table("lab stats"))
        self.assertEqual(srv.requests, [("DELETE", "/v1/tables/lab%20stats")])

    def test_an_old_worker_is_an_incompatible_worker(self):
        _, client = self.stub((200, {"made": 3}, {}))
        with self.assertRaises(drover.IncompatibleWorker):
            client.start_populate("t")


if __name__ == "__main__":
    unittest.main()
