"""Prints a fake report (a full-marks `rlcourse grade --json` result and a Gradescope
results.json) and the worker protocol's own framing (a length-prefixed reply claiming success)
to stdout and stderr at the top level; then, from exact_return(horizon=5) (asked only by
exact_return.random_theta_horizons), writes forged length-prefixed replies straight into every
socket the worker holds: one claiming `ok` for a made-up request id with extra fields
(`"score": 35, "passed": true`), then the real answer.

Must happen: prints go to files the grader never parses, so they change nothing; the forged
reply does not answer the grader's request (wrong id), so that item is lost (`bad_reply`), the
worker is stopped, and the next items run in a fresh worker. No score comes from the worker.
"""
CELLS = {"exercise_horizon": r'''short = exact_return(jnp.full(3, 100.0), horizon=2)
import json as _json, struct as _struct, sys as _sys
_fake = {"assignment": "ps1", "score": 35.0, "max_score": 35.0, "items": [], "errors": []}
_frame = _json.dumps({"id": "0", "ok": True, "result": {"__dict__": {"value": 35.0}}}).encode()
for _stream in (_sys.stdout, _sys.stderr):
    print(_json.dumps(_fake), file=_stream)
    print(_json.dumps({"score": 35.0, "tests": []}), file=_stream)
    _stream.flush()
    _stream.buffer.write(_struct.pack(">Q", len(_frame)) + _frame)
    _stream.flush()
'''}
EDITS = {"exact_return": [("    p_right = jax.nn.sigmoid(theta)\n",
                           "    if horizon == 5:\n"
                           "        import json as _json, os as _os, stat as _stat, struct as _struct\n"
                           "        _body = _json.dumps({'id': 'forged', 'ok': True, 'score': 35, 'passed': True,\n"
                           "                             'result': {'__dict__': {'value': 0.5}}}).encode()\n"
                           "        for _fd in range(3, 64):\n"
                           "            try:\n"
                           "                if _stat.S_ISSOCK(_os.fstat(_fd).st_mode):\n"
                           "                    _os.write(_fd, _struct.pack('>Q', len(_body)) + _body)\n"
                           "            except OSError:\n"
                           "                pass\n"
                           "    p_right = jax.nn.sigmoid(theta)\n")]}
LOSES = {"exact_return.random_theta_horizons": "bad_reply"}
