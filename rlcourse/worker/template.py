"""The trusted template a `ForkLauncher` forks workers from.

It imports numpy, the assignment's framework and the worker code once, then waits. For each
submission the grader sends it one end of a fresh socket (and a descriptor on the worker's
cgroup.procs, when there is a cgroup) and the write ends of its stdout and stderr pipes; the template forks, and the child drops every link to the
template, confines itself (rlcourse.worker.confine: cgroup, limits, Landlock, no capabilities)
while it is still a single thread, and becomes an ordinary worker. The grader
also asks the template to kill a child (inside a sandbox, only the template knows its PID). The template
never runs student code and never starts JAX's backend, so each child begins from the same state.
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
    # fds: the worker's socket, its stdout and stderr pipes, and its cgroup.procs if any.
    confinement = dict(request["confinement"], cgroup_fd=fds[3] if len(fds) > 3 else None)
    server.run_worker(fds[0], scratch=request["scratch"], framework_name=framework.name,
                      compile_cache=request["compile_cache"],
                      cache_writable=request["cache_writable"], confinement=confinement,
                      output=(fds[1], fds[2]))


def serve_forks(control: socket.socket, framework_name: str) -> None:
    framework = framework_named(framework_name)
    framework.preload()
    server._transform_cell("x = 1")  # import IPython's transformer once, here, not per student
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped automatically
    while True:
        try:
            data, fds, _, _ = socket.recv_fds(control, protocol.HEADER.size, 4)
        except OSError:
            return
        if not data:
            return  # the grader has gone: so does the template
        request = protocol.receive_message(control)
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
