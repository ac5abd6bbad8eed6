"""Starting and stopping worker processes: their environment, one lasting thread that starts
them (bubblewrap's --die-with-parent), and killing a worker with everything it started."""
from __future__ import annotations

import os
import signal
import subprocess
import threading
import time


def kill_process_group(pid: int) -> None:
    """SIGKILL a worker and everything it started (it leads its own session)."""
    for kill, target in ((os.killpg, pid), (os.kill, pid)):
        try:
            kill(target, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


_SPAWNER = None
_SPAWNER_LOCK = threading.Lock()


def popen_from_lasting_thread(*args, **kwargs) -> subprocess.Popen:
    """`subprocess.Popen`, run in a thread that lives as long as this process.

    bubblewrap's --die-with-parent is PR_SET_PDEATHSIG, which fires when the *thread* that
    started the sandbox exits, not the process. A worker started from a short-lived thread (the
    one that runs a submission's cells while pytest collects, or a grading service's request
    thread) was killed as soon as that thread finished: mid-grading, which cost items their
    points. Starting every sandbox from one lasting thread keeps --die-with-parent meaning
    "dies with the grader"."""
    global _SPAWNER
    with _SPAWNER_LOCK:
        if _SPAWNER is None:
            import concurrent.futures

            _SPAWNER = concurrent.futures.ThreadPoolExecutor(max_workers=1,
                                                             thread_name_prefix="rlcourse-spawner")
    return _SPAWNER.submit(subprocess.Popen, *args, **kwargs).result()


WORKER_XLA_FLAGS = ("--xla_force_host_platform_device_count=1 --xla_cpu_use_fusion_emitters=false "
                    "--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true")
"""How XLA compiles in every worker (students', the reference's, the cache's warm-up alike, so
that the served compilation cache's keys, which hash these flags, match).

A course's programs are small (a corridor of a few states, batches of a few hundred numbers) and
each is compiled afresh in every student's worker (the served cache holds the given code's
programs only), so compiling them costs far more than running them: in a ps1 submission, XLA's
backend compile was 8.4 of its cells' 14.4 CPU seconds. Without the fusion emitters and with
LLVM's optimisation off, the same cells compile in 2.9 s and run in 7.1 CPU seconds altogether,
every score the same (docs/operators/performance/grade-throughput.md). The flags change how the
programs are compiled, not what they compute beyond rounding, which every grader's tolerance
already allows; the reference run sets the time limits under the same flags."""


def worker_environment() -> dict:
    """A small environment: what Python, JAX and matplotlib need, nothing of the grader's."""
    keep = ("PATH", "LANG", "LC_ALL", "HOME", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "TMPDIR")
    env = {key: os.environ[key] for key in keep if key in os.environ}
    env.update(MPLBACKEND="Agg", PYTHONDONTWRITEBYTECODE="1", PYTHONHASHSEED="0",
               JAX_PLATFORMS="cpu", XLA_FLAGS=WORKER_XLA_FLAGS, TF_CPP_MIN_LOG_LEVEL="2")
    return env


def wait_for_exit(pid: int, timeout: float) -> bool:
    """True when a process is gone within `timeout` seconds (used by tests and the template)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False
