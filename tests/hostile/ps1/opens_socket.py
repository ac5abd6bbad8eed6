"""Opens network connections from the top level of a cell: to a TCP port the test listens on at
127.0.0.1 (LISTENER_PORT, on the grader's machine) and to a public DNS server over TCP, and
tries to bind a listening socket of its own. If it reaches the grader machine's loopback it
raises before setting its answer.

Must happen: no TCP connection leaves the worker (bubblewrap: its own empty network namespace;
rlimits: Landlock denies TCP connect and bind, and a root worker also gets an empty network
namespace), so the answer is set and nothing is lost; the test's listener sees no connection.
"""
LISTENER_PORT = 47613
NEEDS = {"no_tcp"}

CELLS = {"exercise_horizon": r'''import socket as _socket
_reached = []
for _address in (("127.0.0.1", %d), ("1.1.1.1", 53)):
    try:
        _socket.create_connection(_address, timeout=1).close()
        _reached.append(_address)
    except OSError:
        pass
try:
    _server = _socket.socket()
    _server.bind(("127.0.0.1", 0))
    _server.listen()
except OSError:
    pass
if ("127.0.0.1", %d) in _reached:
    raise RuntimeError("reached the grader machine's network")
short = exact_return(jnp.full(3, 100.0), horizon=2)
''' % (LISTENER_PORT, LISTENER_PORT)}
LOSES = {}
