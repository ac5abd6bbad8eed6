"""The trusted template a `ForkLauncher` forks workers from.

It imports numpy, the assignment's framework and the worker code once, then waits. For each
submission the grader sends it one end of a fresh socket, the write ends of its stdout and
stderr pipes, and where there are any one end of its compilation cache's socket
(rlcourse.worker.compile_cache) and a descriptor on the worker's cgroup.procs; the template
forks, and the child drops every link to the
template, confines itself (rlcourse.worker.confine: cgroup, limits, Landlock, no capabilities)
while it is still a single thread, and becomes an ordinary worker. The grader
also asks the template to kill a child (inside a sandbox, only the template knows its PID), and
whether it is ready (a service making an assignment ready waits for its imports). A child forked
as a spare (`"spare": true`) starts its framework's backend once confined and says so before its
submission arrives. The template never runs student code and never starts JAX's backend (nor
torch's threads), so each child begins from the same state.
"""
from __future__ import annotations

import argparse
import os
import signal
import socket

from rlcourse.worker import protocol, server
from rlcourse.worker.processes import kill_process_group
from rlcourse.worker.frameworks import framework_named


def _become_worker(fds: list[int], control: socket.socket, request: dict, framework) -> None:
    control.close()
    os.setsid()
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    # fds, as `request["descriptors"]` names them: the worker's socket, its stdout and stderr
    # pipes, and if it has them its compilation cache's socket and its cgroup.procs.
    named = dict(zip(request["descriptors"], fds))
    confinement = dict(request["confinement"], cgroup_fd=named.get("cgroup"))
    compile_cache = request["compile_cache"]
    if compile_cache and "served" in compile_cache:
        compile_cache = dict(compile_cache, served=named["compile_cache"])
    server.run_worker(named["worker"], scratch=request["scratch"], framework_name=framework.name,
                      compile_cache=compile_cache, confinement=confinement,
                      output=(named["stdout"], named["stderr"]), spare=bool(request.get("spare")))


def serve_forks(control: socket.socket, framework_name: str) -> None:
    framework = framework_named(framework_name)
    framework.preload()
    server._transform_cell("x = 1")  # import IPython's transformer once, here, not per student
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped automatically
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, protocol.HEADER.size, 5)
        except OSError:
            return
        if not data:
            return  # the grader has gone: so does the template
        request = protocol.receive_message(control)
        if request.get("op") == "ready":  # answered only now: the imports above are done
            protocol.send_message(control, {"ready": True})
            continue
        if request.get("op") == "kill":
            kill_process_group(int(request["pid"]))
            protocol.send_message(control, {"killed": request["pid"]})
            continue
        if len(fds) < 3:
            return
        pid = os.fork()
        if pid == 0:
            try:
                _become_worker(fds, control, request, framework)
            finally:
                os._exit(70)
        for fd in fds:
            os.close(fd)
        protocol.send_message(control, {"pid": pid})


def main(argv=None):
    parser = argparse.ArgumentParser(description="rlcourse worker template (internal).")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--framework", required=True)
    options = parser.parse_args(argv)
    serve_forks(socket.socket(fileno=options.fd), options.framework)


if __name__ == "__main__":
    main()
