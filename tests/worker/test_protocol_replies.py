"""The score cannot depend on what a worker says about itself (issue 6, point 5).

A fake worker (a thread speaking the wire format of rlcourse.worker.protocol over a socketpair)
sends every kind of bad reply to a real `rlcourse.worker.handle.Worker`, and through it to
`rlcourse.grading.student.StudentCode`: malformed JSON, oversized lengths, wrong types, NaN,
extra and missing fields, replies to other requests, replies sent twice, arrays whose header
lies, dicts pretending to be arrays. Each must surface as a `WorkerError` with a clear message
(never another exception, a hang, or an accepted value), and a worker that broke the protocol is
stopped (its killer is called) so nothing it sends later is read.
"""
import base64
import json
import socket
import threading
import tempfile
import types
from pathlib import Path

import numpy as np
import pytest

from rlcourse.grading.student import StudentCode
from rlcourse.worker import protocol
from rlcourse.worker.errors import WorkerError
from rlcourse.worker.handle import Worker
from rlcourse.worker.limits import Limits

NO_SCRATCH = Path(tempfile.gettempdir()) / "rlcourse-fake-worker-has-no-scratch"
LIMITS = Limits(reply_bytes=1 << 20, call_seconds=2.0, cell_seconds=2.0)


def frame(body) -> bytes:
    if isinstance(body, dict):
        body = json.dumps(body).encode()
    return protocol.HEADER.pack(len(body)) + body


class FakeWorker:
    """The far end of a socketpair: reads each request and answers with `script(request, n)`,
    a list of raw byte strings to send (or None to stay silent until closed)."""

    def __init__(self, script):
        self.ours, self._theirs = socket.socketpair()
        self.script = script
        self.killed = []
        self.requests = []
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        self.worker = Worker(self.ours, 424242, scratch=NO_SCRATCH, limits=LIMITS,
                             killer=self.killed.append)  # never signals a real process

    def _serve(self):
        try:
            while True:
                request = protocol.receive_message(self._theirs, timeout=10)
                self.requests.append(request)
                answer = self.script(request, len(self.requests) - 1)
                if answer is None:
                    return
                for raw in answer:
                    if raw is None:  # hang up
                        self._theirs.close()
                        return
                    self._theirs.sendall(raw)
        except Exception:  # noqa: BLE001 - the grader side hung up, or closed our socket
            pass

    def close(self):
        for end in (self.ours, self._theirs):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(5)
        self._theirs.close()
        self.ours.close()


def answer(**fields):
    """A script sending one reply per request; "ID" stands for the request's own id."""
    def script(request, n):
        body = {key: (request["id"] if value == "ID" else value) for key, value in fields.items()}
        return [frame(body)]
    return script


def raw(data: bytes):
    return lambda request, n: [data]


def array(values=None, **override):
    values = np.arange(4, dtype=np.float64) if values is None else values
    header = {"__ndarray__": base64.b64encode(values.tobytes()).decode(), "dtype": values.dtype.name,
              "shape": list(values.shape)}
    header.update(override)
    return header


def nested(depth):
    return "[" * depth + "]" * depth


BAD_REPLIES = {
    # framing and JSON
    "malformed JSON": (raw(frame(b'{"id": "x", "ok": tru')), "bad_reply", "not valid JSON"),
    "not UTF-8": (raw(frame(b'{"id": "\xff\xfe"}')), "bad_reply", "not valid JSON"),
    "length beyond any limit": (raw(protocol.HEADER.pack(2 ** 63) + b"{}"), "bad_reply", "larger than"),
    "length beyond the reply limit": (raw(protocol.HEADER.pack((1 << 20) + 1)), "bad_reply", "larger than"),
    "top level is a list": (raw(frame(b"[1, 2, 3]")), "bad_reply", "not a JSON object"),
    "bare NaN": (raw(frame(b'{"id": "x", "ok": true, "result": NaN}')), "bad_reply", "NaN"),
    "bare Infinity": (raw(frame(b'{"id": "x", "ok": true, "result": -Infinity}')), "bad_reply", "Infinity"),
    "integer of 5000 digits": (raw(frame(b'{"id": "x", "ok": true, "result": 1' + b"0" * 5000 + b"}")),
                               "bad_reply", "not valid JSON"),
    "JSON nested 100000 deep": (raw(frame(('{"id": "x", "ok": true, "result": ' + nested(100000) + "}").encode())),
                                "bad_reply", ""),
    "body cut short, then closed": (lambda r, n: [protocol.HEADER.pack(100) + b'{"id":', None], None, None),
    # the envelope
    "reply to another request": (answer(id="0123456789abcdef", ok=True, result=1.0), "bad_reply",
                                 "does not answer the request"),
    "id missing": (answer(ok=True, result=1.0), "bad_reply", "does not answer the request"),
    "id of the wrong type": (answer(id=12345, ok=True, result=1.0), "bad_reply", "does not answer"),
    "ok missing": (answer(id="ID", result=1.0), "bad_reply", "does not answer the request"),
    "ok is a string": (answer(id="ID", ok="true", result=1.0), "bad_reply", "does not answer the request"),
    "ok is 1": (answer(id="ID", ok=1, result=1.0), "bad_reply", "does not answer the request"),
    "error is not a dict": (answer(id="ID", ok=False, error="boom"), "bad_reply", "malformed way"),
    "error missing": (answer(id="ID", ok=False), "bad_reply", "malformed way"),
    # values
    "unknown tagged object": (answer(id="ID", ok=True, result={"__pickle__": "gASVAAAA"}), "bad_reply",
                              "unexpected object"),
    "non-finite float spelled wrong": (answer(id="ID", ok=True, result={"__float__": "1e999"}), "bad_reply",
                                       "non-finite"),
    "float tag with extra field": (answer(id="ID", ok=True, result={"__float__": "nan", "x": 1}),
                                   "bad_reply", "unexpected object"),
    "dict tag holding a list": (answer(id="ID", ok=True, result={"__dict__": [1, 2]}), "bad_reply",
                                "unexpected object"),
    "nested deeper than allowed": (answer(id="ID", ok=True, result=json.loads(nested(40))), "bad_reply",
                                   "nested too deeply"),
    # arrays that lie
    "array shape larger than its data": (answer(id="ID", ok=True, result=array(shape=[1000, 1000])),
                                         "bad_reply", "does not match"),
    "array shape smaller than its data": (answer(id="ID", ok=True, result=array(shape=[2])), "bad_reply",
                                          "does not match"),
    "array dtype wider than its data": (answer(id="ID", ok=True, result=array(np.arange(3, dtype=np.float32),
                                                                               dtype="float64")),
                                        "bad_reply", "does not match"),
    "array of dtype object": (answer(id="ID", ok=True, result=array(dtype="object")), "bad_reply", "not allowed"),
    "array of dtype complex": (answer(id="ID", ok=True, result=array(dtype="complex128", shape=[2])),
                               "bad_reply", "not allowed"),
    "array with a negative dimension": (answer(id="ID", ok=True, result=array(shape=[-4])), "bad_reply",
                                        "malformed"),
    "array with a boolean dimension": (answer(id="ID", ok=True, result=array(shape=[True, 4])), "bad_reply",
                                       "malformed"),
    "array with a float dimension": (answer(id="ID", ok=True, result=array(shape=[4.0])), "bad_reply",
                                     "malformed"),
    "array shape is a string": (answer(id="ID", ok=True, result=array(shape="4")), "bad_reply", "malformed"),
    "array of 10**12 elements": (answer(id="ID", ok=True, result=array(shape=[10 ** 6, 10 ** 6])), "bad_reply",
                                 "larger than allowed"),
    "array payload not base64": (answer(id="ID", ok=True, result=array(__ndarray__="not base64!")),
                                 "bad_reply", "not base64"),
    "array payload not text": (answer(id="ID", ok=True, result=array(__ndarray__=[1, 2, 3, 4])), "bad_reply",
                               "not text"),
    "dict pretending to be an array": (answer(id="ID", ok=True, result=array(extra=1)), "bad_reply",
                                       "unexpected object"),
    "array header missing its dtype": (answer(id="ID", ok=True,
                                              result={"__ndarray__": "AAAAAAAAAAA=", "shape": [1]}),
                                       "bad_reply", "unexpected object"),
}


@pytest.mark.parametrize("name", sorted(BAD_REPLIES))
def test_every_bad_reply_is_a_worker_error(name):
    script, kind, words = BAD_REPLIES[name]
    fake = FakeWorker(script)
    try:
        with pytest.raises(WorkerError) as caught:
            fake.worker.request("call", {"function": "f", "args": [], "kwargs": {}}, timeout=3)
        if kind is None:  # the worker hung up mid-reply
            assert caught.value.kind == "worker_crashed"
        else:
            assert caught.value.kind == kind, str(caught.value)
            assert words in str(caught.value)
        message = str(caught.value)
        if "malformed reply" in message or "does not answer" in message:
            # the stream can no longer be trusted: the worker is stopped, nothing more is read
            assert fake.killed == [424242] and not fake.worker.alive
    finally:
        fake.close()


def test_a_silent_worker_times_out_and_is_stopped():
    fake = FakeWorker(lambda request, n: None)
    try:
        with pytest.raises(WorkerError) as caught:
            fake.worker.request("call", {"function": "f", "args": [], "kwargs": {}}, timeout=0.3)
        assert caught.value.kind == "timeout" and fake.killed == [424242]
    finally:
        fake.close()


def test_a_reply_sent_twice_cannot_answer_the_next_request():
    def twice(request, n):
        reply = frame({"id": request["id"], "ok": True, "result": float(n)})
        return [reply, reply] if n == 0 else [frame({"id": request["id"], "ok": True, "result": 99.0})]

    fake = FakeWorker(twice)
    try:
        assert fake.worker.request("call", {"function": "f"}, timeout=3) == 0.0
        with pytest.raises(WorkerError) as caught:
            fake.worker.request("call", {"function": "f"}, timeout=3)
        assert caught.value.kind == "bad_reply" and "does not answer" in str(caught.value)
        assert not fake.worker.alive
        with pytest.raises(WorkerError):
            fake.worker.request("call", {"function": "f"}, timeout=3)
    finally:
        fake.close()


def test_extra_fields_are_ignored_and_claim_nothing():
    fake = FakeWorker(answer(id="ID", ok=True, result={"__dict__": {"value": 0.5}}, score=35, passed=True,
                             grade="A"))
    try:
        assert fake.worker.request("call", {"function": "f"}, timeout=3) == {"value": 0.5}
    finally:
        fake.close()


def test_an_error_reply_is_bounded_and_labelled():
    fake = FakeWorker(answer(id="ID", ok=False, error={"type": "ValueError", "message": "x" * 1_000_000,
                                                        "where": "w" * 10_000}))
    try:
        with pytest.raises(WorkerError) as caught:
            fake.worker.request("call", {"function": "f"}, timeout=3)
        assert caught.value.kind == "raised"
        assert len(str(caught.value)) <= 600 and len(caught.value.where) <= 100
    finally:
        fake.close()


def test_nan_is_data_not_a_pass():
    """A tagged NaN decodes to NaN (data); the grader's as_array refuses it as an answer."""
    from rlcourse.grading.rubric import BadOutput, as_array

    fake = FakeWorker(answer(id="ID", ok=True, result={"__dict__": {"value": {"__float__": "nan"}}}))
    try:
        value = fake.worker.request("call", {"function": "f"}, timeout=3)["value"]
        assert np.isnan(value)
        with pytest.raises(BadOutput):
            as_array(value, what="f()")
    finally:
        fake.close()


# --- through StudentCode ------------------------------------------------------------------------
class FakeLauncher:
    def __init__(self, script):
        self.script = script
        self.options = types.SimpleNamespace(limits=LIMITS)
        self.fakes = []

    def launch(self):
        fake = FakeWorker(self.script)
        self.fakes.append(fake)
        return fake.worker

    def close(self):
        for fake in self.fakes:
            fake.close()


def student_code(script):
    submission = types.SimpleNamespace(cells=[])
    launcher = FakeLauncher(script)
    code = StudentCode(submission, launcher, submission_seconds=30)
    code.close = lambda: None  # no scratch directory to remove
    return code, launcher


@pytest.mark.parametrize("result", [None, 1.0, [1, 2], {"__dict__": {"grad": 1.0}},
                                    {"__dict__": {"value": 1.0}}])
def test_student_code_rejects_incomplete_call_answers(result):
    code, launcher = student_code(answer(id="ID", ok=True, result=result))
    try:
        with pytest.raises(WorkerError) as caught:
            code.value_and_grad("f", np.zeros(3), wrt="theta")
        assert caught.value.kind == "bad_reply" and "incomplete" in str(caught.value)
    finally:
        launcher.close()


@pytest.mark.parametrize("result", [None, {"__dict__": {"values": [], "missing": []}},
                                    {"__dict__": {"values": {"__dict__": {}}, "missing": "x"}},
                                    {"__dict__": {"values": {"__dict__": {}}, "missing": []}}])
def test_student_code_rejects_malformed_variable_listings(result):
    code, launcher = student_code(answer(id="ID", ok=True, result=result))
    try:
        with pytest.raises(WorkerError) as caught:
            code.get("x")
        assert caught.value.kind == "bad_reply"
    finally:
        launcher.close()


def test_student_code_turns_a_lying_array_into_a_failed_call():
    code, launcher = student_code(answer(id="ID", ok=True,
                                         result={"__dict__": {"value": array(shape=[1000, 1000])}}))
    try:
        with pytest.raises(WorkerError) as caught:
            code.call("f", 1.0)
        assert caught.value.kind == "bad_reply" and "does not match" in str(caught.value)
    finally:
        launcher.close()
