"""The wire format between the grader process and a worker running student code.

Every message is a length-prefixed JSON object. Arrays travel as raw little-endian bytes with an
explicit dtype and shape, so the grader never unpickles anything a worker sends: a reply is parsed
with `json.loads` and `numpy.frombuffer` only, after checking its size, dtype and shape. A worker
is untrusted (it runs student code), so `decode` treats every reply as hostile input.
"""
from __future__ import annotations

import base64
import json
import math
import select
import socket
import struct
import time

import numpy as np

HEADER = struct.Struct(">Q")
READY = {"ready": True}
"""What a spare worker sends, unasked, once it is confined and its framework started: the launcher
reads it before it hands the spare to a submission (rlcourse.worker.launchers.ForkLauncher)."""
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
MAX_ARRAY_ELEMENTS = 4_000_000
MAX_DEPTH = 16
ALLOWED_DTYPES = frozenset(
    ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
     "float16", "float32", "float64"])


class ProtocolError(Exception):
    """A message that breaks the wire format: the worker is misbehaving or has died."""


class WorkerTimeout(ProtocolError):
    """The worker did not answer within the time allowed for the call."""


class WorkerGone(ProtocolError):
    """The worker closed its end: it exited, crashed or was killed."""


# --- values -------------------------------------------------------------------------------------
def encode(value, _depth=0):
    """Turn plain Python data and numpy arrays into JSON-ready data.

    Tuples become lists; non-finite floats become tagged strings so JSON stays strict.
    """
    if _depth > MAX_DEPTH:
        raise ValueError("value nested too deeply to send")
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, np.bool_):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else {"__float__": repr(value)}
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, np.ndarray):
        array = np.array(value, order="C", copy=True)  # (ascontiguousarray turns 0-d into 1-d)
        if array.dtype.name not in ALLOWED_DTYPES:
            raise ValueError(f"arrays of dtype {array.dtype} cannot be sent")
        array = array.astype(array.dtype.newbyteorder("<"), copy=False)
        return {"__ndarray__": base64.b64encode(array.tobytes()).decode("ascii"),
                "dtype": array.dtype.name, "shape": list(array.shape)}
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise ValueError("only dicts with string keys can be sent")
        return {"__dict__": {key: encode(item, _depth + 1) for key, item in value.items()}}
    if isinstance(value, (list, tuple)):
        return [encode(item, _depth + 1) for item in value]
    raise ValueError(f"values of type {type(value).__name__} cannot be sent")


def decode(data, _depth=0):
    """Rebuild a value produced by `encode`, rejecting anything outside the format."""
    if _depth > MAX_DEPTH:
        raise ProtocolError("value nested too deeply")
    if data is None or isinstance(data, (bool, str, int, float)):
        return data
    if isinstance(data, list):
        return [decode(item, _depth + 1) for item in data]
    if not isinstance(data, dict):
        raise ProtocolError(f"unexpected JSON value of type {type(data).__name__}")
    if set(data) == {"__float__"}:
        text = data["__float__"]
        if text not in ("nan", "inf", "-inf"):
            raise ProtocolError("bad non-finite float")
        return float(text)
    if set(data) == {"__dict__"} and isinstance(data["__dict__"], dict):
        return {str(key): decode(item, _depth + 1) for key, item in data["__dict__"].items()}
    if set(data) == {"__ndarray__", "dtype", "shape"}:
        return _decode_array(data)
    raise ProtocolError("unexpected object in message")


def _decode_array(data):
    dtype, shape, payload = data["dtype"], data["shape"], data["__ndarray__"]
    if dtype not in ALLOWED_DTYPES:
        raise ProtocolError(f"array dtype {dtype!r} is not allowed")
    if (not isinstance(shape, list) or len(shape) > 8
            or not all(isinstance(n, int) and not isinstance(n, bool) and 0 <= n for n in shape)):
        raise ProtocolError("array shape is malformed")
    count = math.prod(shape)
    if count > MAX_ARRAY_ELEMENTS:
        raise ProtocolError(f"array of {count} elements is larger than allowed")
    if not isinstance(payload, str):
        raise ProtocolError("array payload is not text")
    try:
        raw = base64.b64decode(payload, validate=True)
    except ValueError as error:
        raise ProtocolError("array payload is not base64") from error
    little_endian = np.dtype(dtype).newbyteorder("<")
    if len(raw) != count * little_endian.itemsize:
        raise ProtocolError("array payload does not match its shape and dtype")
    return np.frombuffer(raw, dtype=little_endian).astype(np.dtype(dtype)).reshape(tuple(shape))


# --- framing ------------------------------------------------------------------------------------
def send_message(sock: socket.socket, message: dict) -> None:
    body = json.dumps(message, allow_nan=False).encode("utf-8")
    if len(body) > MAX_MESSAGE_BYTES:
        raise ValueError(f"message of {len(body)} bytes is larger than allowed")
    sock.sendall(HEADER.pack(len(body)) + body)


def receive_message(sock: socket.socket, *, timeout: float | None = None,
                    max_bytes: int = MAX_MESSAGE_BYTES) -> dict:
    """Read one message; raise WorkerTimeout, WorkerGone or ProtocolError instead of hanging."""
    deadline = None if timeout is None else time.monotonic() + timeout
    (length,) = HEADER.unpack(_read_exactly(sock, HEADER.size, deadline))
    if length > max_bytes:
        raise ProtocolError(f"reply of {length} bytes is larger than the {max_bytes} allowed")
    body = _read_exactly(sock, length, deadline)
    try:
        message = json.loads(body.decode("utf-8"), parse_constant=_reject_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ProtocolError(f"reply is not valid JSON: {str(error)[:200]}") from None
    if not isinstance(message, dict):
        raise ProtocolError("reply is not a JSON object")
    return message


def _reject_constant(name):
    raise ValueError(f"bare {name} is not allowed")


def _read_exactly(sock, count, deadline):
    chunks, received = [], 0
    while received < count:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            raise WorkerTimeout("no reply in time")
        ready, _, _ = select.select([sock], [], [], remaining)
        if not ready:
            raise WorkerTimeout("no reply in time")
        chunk = sock.recv(min(count - received, 1 << 20))
        if not chunk:
            raise WorkerGone("worker closed the connection")
        chunks.append(chunk)
        received += len(chunk)
    return b"".join(chunks)
