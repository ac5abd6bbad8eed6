"""Workers: student code runs in its own limited process, and whatever it does, the grader's
side gets an answer or a WorkerError, never a hang, a crash or a forged result."""
import os
import time

import numpy as np
import pytest

from rlcourse.worker.errors import WorkerError
from rlcourse.worker.launchers import WorkerOptions, make_launcher
from rlcourse.worker.limits import Limits
from rlcourse.worker.processes import wait_for_exit
from rlcourse.worker.sandbox import bwrap_status

pytestmark = pytest.mark.slow

FAST_LIMITS = Limits(call_seconds=5, cell_seconds=5, memory_bytes=2 << 30, file_bytes=1 << 20)


ISOLATIONS = ["rlimits"] + (["bwrap"] if bwrap_status()[0] else [])


@pytest.fixture(params=[(strategy, isolation) for strategy in ("spawn", "fork") for isolation in ISOLATIONS],
                ids=lambda param: "-".join(param))
def launcher(request):
    strategy, isolation = request.param
    launcher = make_launcher(WorkerOptions("numpy", FAST_LIMITS, isolation=isolation), strategy=strategy)
    assert launcher.isolation == isolation
    yield launcher
    launcher.close()


@pytest.fixture
def worker(launcher):
    worker = launcher.launch()
    yield worker
    worker.kill()


def run(worker, source, timeout=5):
    return worker.request("run_cell", {"index": 0, "source": source}, timeout=timeout)


def call(worker, function, *args, timeout=5, **kwargs):
    return worker.request("call", {"function": function, "args": list(args), "kwargs": kwargs},
                          timeout=timeout)["value"]


class TestAnswers:
    def test_cells_define_functions_that_calls_reach(self, worker):
        run(worker, "import numpy as np\ndef double(x):\n    return 2 * x")
        np.testing.assert_array_equal(call(worker, "double", np.arange(3)), [0, 2, 4])

    def test_prints_and_raw_writes_to_stdout_never_reach_the_protocol(self, worker):
        run(worker, "import os\nprint('{\"ok\": true}' * 1000)\nos.write(1, b'\\x00' * 100)\n"
                    "def f():\n    print('noise')\n    return 7")
        assert call(worker, "f") == 7
        assert "noise" in worker.output_tail("stdout.txt")

    def test_an_exception_names_its_type_and_cell_line(self, worker):
        run(worker, "def f():\n    return 1 / 0")
        with pytest.raises(WorkerError) as error:
            call(worker, "f")
        assert error.value.kind == "raised" and "ZeroDivisionError" in str(error.value)
        assert error.value.where == "cell 0, line 2"

    def test_a_missing_function_is_reported_as_missing(self, worker):
        with pytest.raises(WorkerError) as error:
            call(worker, "nowhere")
        assert error.value.kind == "missing_name"

    def test_not_implemented_is_its_own_kind(self, worker):
        run(worker, "def f():\n    raise NotImplementedError()")
        with pytest.raises(WorkerError) as error:
            call(worker, "f")
        assert error.value.kind == "not_implemented"

    def test_an_unsendable_return_value_is_an_error_not_a_crash(self, worker):
        run(worker, "def f():\n    return object()")
        with pytest.raises(WorkerError) as error:
            call(worker, "f")
        assert error.value.kind == "raised" and worker.alive


class TestHostileCode:
    @pytest.mark.parametrize("source", ["import sys; sys.exit(0)", "raise SystemExit(1)", "exit()"])
    def test_sys_exit_is_an_exception_of_that_request_and_the_worker_lives_on(self, worker, source):
        with pytest.raises(WorkerError) as error:
            run(worker, source)
        assert error.value.kind == "raised" and "SystemExit" in str(error.value)
        run(worker, "x = 1")

    @pytest.mark.parametrize("source", [
        "import os; os._exit(3)", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"])
    def test_leaving_the_process_is_a_crash_of_that_request(self, worker, source):
        with pytest.raises(WorkerError) as error:
            run(worker, source)
        assert error.value.kind == "worker_crashed"
        assert not worker.alive

    def test_an_endless_loop_times_out_and_the_process_is_killed(self, worker, launcher):
        started = time.monotonic()
        with pytest.raises(WorkerError) as error:
            run(worker, "while True:\n    pass", timeout=1)
        assert error.value.kind == "timeout"
        assert time.monotonic() - started < 3
        with pytest.raises(WorkerError):  # the worker is gone: nothing answers any more
            run(worker, "x = 1")
        if launcher.isolation == "rlimits":  # a host PID (inside bwrap it is the sandbox's own)
            assert wait_for_exit(worker.pid, 5)

    def test_memory_beyond_the_limit_fails_inside_the_worker(self, worker):
        with pytest.raises(WorkerError) as error:
            run(worker, "block = bytearray(4 << 30)")
        assert error.value.kind in ("raised", "worker_crashed")
        assert "MemoryError" in str(error.value) or error.value.kind == "worker_crashed"

    def test_a_file_beyond_the_size_limit_cannot_be_written(self, worker):
        with pytest.raises(WorkerError) as error:
            run(worker, "open('big.bin', 'wb').write(b'x' * (8 << 20))")
        assert "File too large" in str(error.value) or "Errno 27" in str(error.value)

    def test_a_forged_reply_on_the_protocol_socket_is_refused(self, worker):
        source = (
            "import os, socket, struct, json\n"
            "for fd in map(int, os.listdir('/proc/self/fd')):\n"
            "    try:\n"
            "        s = socket.socket(fileno=os.dup(fd))\n"
            "    except OSError:\n"
            "        continue\n"
            "    body = json.dumps({'id': 'forged', 'ok': True, 'result': 100}).encode()\n"
            "    s.sendall(struct.pack('>Q', len(body)) + body)\n")
        with pytest.raises(WorkerError) as error:
            run(worker, source)
        assert error.value.kind == "bad_reply"


def test_forked_workers_share_no_state():
    launcher = make_launcher(WorkerOptions("numpy", FAST_LIMITS), strategy="fork")
    try:
        first, second = launcher.launch(), launcher.launch()
        run(first, "import numpy\nnumpy.secret = 42\nleaked = 1")
        run(second, "import numpy\ndef peek():\n    return getattr(numpy, 'secret', None)")
        assert call(second, "peek") is None
        with pytest.raises(WorkerError):
            call(second, "leaked")
        assert first.pid != second.pid != os.getpid()
        first.kill(), second.kill()
    finally:
        launcher.close()


def test_jax_works_in_a_forked_worker():
    """The template imports JAX before forking; the child must still compile and run."""
    launcher = make_launcher(WorkerOptions("jax", Limits()), strategy="fork")
    try:
        for _ in range(2):
            worker = launcher.launch()
            run(worker, "import jax, jax.numpy as jnp\nf = jax.jit(lambda x: jnp.sum(x ** 2))", timeout=60)
            reply = worker.request("call", {"function": "f", "args": [np.arange(3.0)], "kwargs": {},
                                            "grad_wrt": ["x"]}, timeout=60)
            assert float(reply["value"]) == 5.0
            np.testing.assert_allclose(reply["grad"], [0.0, 2.0, 4.0])
            worker.kill()
    finally:
        launcher.close()


class TestLifetime:
    def test_a_worker_launched_from_a_thread_that_ends_keeps_answering(self, launcher):
        """Grading starts a submission's worker from a short-lived thread (its cells run while
        pytest collects); the worker must live until the grader stops it, not die with that
        thread, as bubblewrap's --die-with-parent once made it do."""
        import threading

        launched = []

        def start_and_run_cells():
            launched.append(launcher.launch())
            run(launched[0], "def seven():\n    return 7")  # the worker is up before the thread ends

        starter = threading.Thread(target=start_and_run_cells)
        starter.start()
        starter.join()
        worker = launched[0]
        try:
            time.sleep(0.5)  # a parent-death signal would land as the thread exits
            assert call(worker, "seven") == 7
            assert worker.alive
        finally:
            worker.kill()


def run_patiently(worker, source):
    """`run`, allowing for a busy machine: a spawned worker's first request waits for its imports."""
    return run(worker, source, timeout=30)


class TestNothingLeftBehindIsTrusted:
    """The grader reads the worker's prints from its own pipes, never from a file in the scratch
    directory, which the student may replace with a link to a secret or with a FIFO."""

    def test_a_crash_notice_quotes_the_worker_s_stderr_from_the_pipe(self, worker):
        run_patiently(worker, "import sys, os\ndef die():\n    print('last words', file=sys.stderr, flush=True)\n"
                    "    os._exit(3)")
        with pytest.raises(WorkerError) as crashed:
            call(worker, "die", timeout=20)
        assert crashed.value.kind == "worker_crashed" and "last words" in str(crashed.value)

    @pytest.mark.parametrize("replacement", ["symlink", "fifo"])
    def test_a_link_or_fifo_in_place_of_its_output_files_is_never_opened(self, worker, tmp_path, replacement):
        secret = tmp_path / "secret.txt"
        secret.write_text("ROOT-ONLY-SECRET " * 10)
        os.chmod(secret, 0o600)
        run_patiently(worker, "import os, sys\n"
                    "def swap_and_die(secret, replacement):\n"
                    "    for name in ('stderr.txt', 'stdout.txt'):\n"
                    "        try:\n"
                    "            os.unlink(name)\n"
                    "        except OSError:\n"
                    "            pass\n"
                    "        os.symlink(secret, name) if replacement == 'symlink' else os.mkfifo(name)\n"
                    "    print('swapped', file=sys.stderr, flush=True)\n"
                    "    os._exit(1)")
        started = time.monotonic()
        with pytest.raises(WorkerError) as crashed:
            call(worker, "swap_and_die", str(secret), replacement, timeout=20)
        assert time.monotonic() - started < 19
        assert "ROOT-ONLY-SECRET" not in str(crashed.value) and "swapped" in str(crashed.value)
        assert "ROOT-ONLY-SECRET" not in worker.output_tail("stdout.txt") + worker.output_tail("stderr.txt")

    def test_endless_output_costs_the_grader_a_bounded_tail(self, worker):
        run_patiently(worker, "def flood():\n    for n in range(50_000):\n        print('x' * 50, n)\n    return 1")
        assert call(worker, "flood", timeout=30) == 1
        tail = worker.output_tail("stdout.txt")
        assert tail.endswith("49999") and len(tail) <= FAST_LIMITS.output_chars
        assert all(len(buffer) <= 4 * FAST_LIMITS.output_chars for buffer in worker._output._tails.values())

    def test_a_stopped_worker_s_scratch_directory_is_removed_at_once(self, worker):
        run_patiently(worker, "import os\ndef die():\n    os.makedirs('deep/er', exist_ok=True)\n"
                    "    open('deep/er/file.bin', 'wb').write(b'x' * 1000)\n"
                    "    os.chmod('deep', 0)\n    os._exit(1)")
        with pytest.raises(WorkerError) as crashed:
            call(worker, "die", timeout=20)
        assert crashed.value.kind == "worker_crashed"
        assert not worker.alive and not worker.scratch.exists()


def test_a_run_folder_changed_under_the_template_is_replaced_before_the_next_launch():
    """Workers cannot change the run's folder (read-only to them, owned by another user), but if
    anything did, the next launch notices (mode, owner) and starts over in a fresh one."""
    launcher = make_launcher(WorkerOptions("numpy", FAST_LIMITS), strategy="fork")
    try:
        first = launcher.launch()
        damaged = first.scratch.parent
        first.kill()
        os.chmod(damaged, 0)
        second = launcher.launch()
        assert second.scratch.parent != damaged and not damaged.exists()
        run_patiently(second, "def f():\n    return 2")
        assert call(second, "f") == 2
        second.kill()
    finally:
        launcher.close()
