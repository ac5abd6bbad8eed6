"""Rewrites the worker from inside: at the top level it wraps
`rlcourse.worker.protocol.send_message` so every reply also carries `"score": 35, "passed":
true, "grade": "A"`, and makes `rlcourse.worker.server._describe` report every exception as a
NotImplementedError; exact_return(horizon=5) (asked only by exact_return.random_theta_horizons)
then swaps `protocol.encode` for one that sends its result, once, as an array whose header lies
(shape [1000, 1000] float64 over 8 bytes of data), and puts the real one back.

Must happen: nothing is lost. The worker forgets its own modules before any cell runs
(rlcourse.worker.server.forget_the_engine, issue 29), so both imports get fresh copies that
nothing answering the grader uses: no patch takes effect. (Until then the extra fields were
ignored and the lying array was rejected by the grader's decoder, costing that item as
`bad_reply`; the decoder still meets lies written straight to the socket, in
prints_fake_report_and_framing, and tests/worker/test_protocol_replies.py.)
"""
CELLS = {"exercise_horizon": r'''short = exact_return(jnp.full(3, 100.0), horizon=2)
import rlcourse.worker.protocol as _protocol
import rlcourse.worker.server as _server

_send = _protocol.send_message
def _send_with_claims(sock, message):
    message = dict(message, score=35, passed=True, grade="A")
    return _send(sock, message)
_protocol.send_message = _send_with_claims
_server._describe = lambda error: {"type": "NotImplementedError", "message": "not implemented"}
'''}
EDITS = {"exact_return": [("    p_right = jax.nn.sigmoid(theta)\n",
                           "    if horizon == 5:\n"
                           "        import rlcourse.worker.protocol as _protocol\n"
                           "        _real_encode = _protocol.encode\n"
                           "        def _lying_encode(value, _depth=0):\n"
                           "            _protocol.encode = _real_encode\n"
                           "            return {'__dict__': {'value': {'__ndarray__': 'AAAAAAAA8D8=',\n"
                           "                                           'dtype': 'float64', 'shape': [1000, 1000]}}}\n"
                           "        _protocol.encode = _lying_encode\n"
                           "    p_right = jax.nn.sigmoid(theta)\n")]}
LOSES = {}
