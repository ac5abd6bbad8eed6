"""The wire format: round trips for plain data, and refusal of anything outside the format."""
import base64
import json
import socket
import struct

import numpy as np
import pytest

from rlcourse.worker import protocol


class TestRoundTrip:
    @pytest.mark.parametrize("value", [
        None, True, 3, -2.5, "text", [1, 2.0, "x"], {"a": 1, "b": [None]},
        np.arange(6, dtype=np.int32).reshape(2, 3), np.array(1.5, dtype=np.float32),
        np.zeros((0, 4)), np.array([True, False])])
    def test_value_survives_encode_json_decode(self, value):
        decoded = protocol.decode(json.loads(json.dumps(protocol.encode(value))))
        if isinstance(value, np.ndarray):
            assert decoded.dtype == value.dtype and decoded.shape == value.shape
            np.testing.assert_array_equal(decoded, value)
        else:
            assert decoded == value

    def test_non_finite_floats_travel_as_tagged_strings(self):
        decoded = protocol.decode(json.loads(json.dumps(protocol.encode([float("nan"), float("-inf")]))))
        assert np.isnan(decoded[0]) and decoded[1] == float("-inf")

    def test_tuples_become_lists(self):
        assert protocol.decode(protocol.encode((1, (2, 3)))) == [1, [2, 3]]

    def test_a_dict_with_array_like_keys_stays_a_dict(self):
        value = {"__ndarray__": "x", "dtype": "float64", "shape": [1]}
        assert protocol.decode(protocol.encode(value)) == value


class TestRefusal:
    @pytest.mark.parametrize("value", [object(), {1: 2}, np.array(["a"]), np.array([1 + 2j])])
    def test_encode_refuses_what_the_format_cannot_carry(self, value):
        with pytest.raises(ValueError):
            protocol.encode(value)

    @pytest.mark.parametrize("data", [
        {"__ndarray__": "AAAA", "dtype": "object", "shape": [1]},
        {"__ndarray__": "AAAA", "dtype": "float64", "shape": [7]},
        {"__ndarray__": "!!!!", "dtype": "uint8", "shape": [3]},
        {"__ndarray__": "", "dtype": "float64", "shape": [10**9, 10**9]},
        {"__ndarray__": "", "dtype": "float64", "shape": [-1]},
        {"__ndarray__": "", "dtype": "float64", "shape": "3"},
        {"__float__": "1e999"},
        {"__pickle__": "gASV"},
        {"unexpected": 1},
    ])
    def test_decode_refuses_malformed_or_oversized_data(self, data):
        with pytest.raises(protocol.ProtocolError):
            protocol.decode(data)

    def test_decode_refuses_deep_nesting(self):
        data = 1
        for _ in range(100):
            data = [data]
        with pytest.raises(protocol.ProtocolError):
            protocol.decode(data)


class TestFraming:
    def test_message_round_trip_over_a_socket(self):
        left, right = socket.socketpair()
        protocol.send_message(left, {"id": "1", "x": [1, 2]})
        assert protocol.receive_message(right, timeout=1) == {"id": "1", "x": [1, 2]}

    def test_silence_is_a_timeout_not_a_hang(self):
        left, right = socket.socketpair()
        with pytest.raises(protocol.WorkerTimeout):
            protocol.receive_message(right, timeout=0.05)

    def test_a_closed_peer_is_reported_as_gone(self):
        left, right = socket.socketpair()
        left.close()
        with pytest.raises(protocol.WorkerGone):
            protocol.receive_message(right, timeout=1)

    @pytest.mark.parametrize("body", [b"not json", b"[1, 2]", b"\xff\xfe", b'{"x": NaN}'])
    def test_a_reply_that_is_not_a_json_object_is_refused(self, body):
        left, right = socket.socketpair()
        left.sendall(struct.pack(">Q", len(body)) + body)
        with pytest.raises(protocol.ProtocolError):
            protocol.receive_message(right, timeout=1)

    def test_an_oversized_length_is_refused_before_reading(self):
        left, right = socket.socketpair()
        left.sendall(struct.pack(">Q", 2**40))
        with pytest.raises(protocol.ProtocolError, match="larger than"):
            protocol.receive_message(right, timeout=1, max_bytes=1024)

    def test_base64_payload_is_little_endian_raw_bytes(self):
        encoded = protocol.encode(np.array([1.0], dtype=np.float64))
        assert base64.b64decode(encoded["__ndarray__"]) == struct.pack("<d", 1.0)
