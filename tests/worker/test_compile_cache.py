"""The compilation cache (rlcourse.worker.compile_cache): a student's worker has no folder to list
or read, gets an entry only by the key of a program it built itself, from the grader, and the
trusted warm-up stores programs of the given code only, never one traced from, or asked for by,
a line of the instructor's answers (issue 29, findings 4 and 5)."""
import os
import re
import socket
import threading
import time
from pathlib import Path

import pytest

from rlcourse.worker.compile_cache import LENGTH, MAX_ENTRY_BYTES, CacheServer
from rlcourse.worker.launchers import WorkerOptions, make_launcher
from rlcourse.worker.limits import Limits
from rlcourse.worker.sandbox import bwrap_status

ROOT = Path(__file__).resolve().parents[2]
LIMITS = Limits(call_seconds=60, cell_seconds=60, memory_bytes=4 << 30)
KEY = "jit_double-" + "ab" * 32
LAUNCHERS = [("fork", "rlimits"), ("spawn", "rlimits")] + (
    [("fork", "bwrap"), ("spawn", "bwrap")] if bwrap_status()[0] else [])


def ask(sock: socket.socket, key: bytes) -> bytes:
    sock.sendall(key + b"\n")
    (length,) = LENGTH.unpack(sock.recv(LENGTH.size, socket.MSG_WAITALL))
    return sock.recv(length, socket.MSG_WAITALL) if length else b""


@pytest.fixture
def served(tmp_path):
    """A CacheServer of `tmp_path/cache` and the worker's end of its conversation."""
    folder = tmp_path / "cache"
    folder.mkdir()
    ours, theirs = socket.socketpair()
    theirs.settimeout(10)
    server = CacheServer(folder, ours)
    yield folder, server, theirs
    server.close()
    theirs.close()


class TestCacheServer:
    def test_an_entry_is_served_by_its_key_and_a_missing_one_is_empty(self, served):
        folder, server, worker = served
        (folder / f"{KEY}-cache").write_bytes(b"compiled program")
        assert ask(worker, KEY.encode()) == b"compiled program"
        assert ask(worker, KEY.replace("ab", "cd").encode()) == b""
        assert (server.asked, server.served) == (2, 1)

    @pytest.mark.parametrize("key", [b"../cache-" + b"ab" * 32, b"sub/jit_x-" + b"ab" * 32,
                                     b"jit_double", b"warmed-0123456789abcdef", b"reference.lock"])
    def test_nothing_but_a_key_names_a_file(self, served, key):
        folder, _, worker = served
        for name in ("../cache-" + "ab" * 32 + "-cache", "warmed-0123456789abcdef", "reference.lock"):
            (folder / name).write_bytes(b"not an entry")
        (folder / "sub").mkdir()
        (folder / "sub" / ("jit_x-" + "ab" * 32 + "-cache")).write_bytes(b"not an entry")
        assert ask(worker, key) == b""

    def test_a_link_a_fifo_or_an_oversized_file_is_never_served(self, served, tmp_path):
        folder, _, worker = served
        secret = tmp_path / "secret.txt"
        secret.write_text("root only")
        links = "jit_link-" + "ab" * 32
        fifo = "jit_fifo-" + "ab" * 32
        huge = "jit_huge-" + "ab" * 32
        os.symlink(secret, folder / f"{links}-cache")
        os.mkfifo(folder / f"{fifo}-cache")
        with open(folder / f"{huge}-cache", "wb") as handle:
            handle.truncate(MAX_ENTRY_BYTES + 1)
        for key in (links, fifo, huge):
            assert ask(worker, key.encode()) == b""

    def test_what_is_not_a_question_ends_the_conversation(self, served):
        _, server, worker = served
        worker.sendall(b"x" * 5000)
        assert worker.recv(1) == b""  # the grader hung up: the worker compiles everything itself
        server._thread.join(timeout=5)
        assert not server._thread.is_alive()

    def test_closing_ends_a_thread_that_waits_for_a_question(self, served):
        _, server, _ = served
        started = time.monotonic()
        server.close()
        assert not server._thread.is_alive() and time.monotonic() - started < 5


CELL = "import jax, jax.numpy as jnp\ndouble = jax.jit(lambda x: 2 * x + 1, inline=False)\nvalue = double(jnp.ones(5))\n"
PEEK = """
import os
def peek(folder):
    import jax
    seen = {"configured": jax.config.jax_compilation_cache_dir}
    try:
        seen["listed"] = sorted(os.listdir(folder))
    except OSError as error:
        seen["listed"] = type(error).__name__
    try:
        seen["read"] = [len(open(os.path.join(folder, name), "rb").read()) for name in sorted(os.listdir(folder))]
    except OSError as error:
        seen["read"] = type(error).__name__
    from jax._src import compilation_cache
    seen["folder_of_the_cache"] = str(getattr(compilation_cache._cache, "_path", None))
    return seen
"""


def warm(folder: Path, cells: list[str], given_lines: dict, strategy="fork", isolation="rlimits") -> None:
    """Run `cells` (cell i as `<cell i>`) in a worker that writes the cache, as the warm-up."""
    launcher = make_launcher(WorkerOptions("jax", LIMITS, compile_cache=str(folder), cache_writable=True,
                                           given_lines=given_lines, isolation=isolation), strategy=strategy)
    try:
        worker = launcher.launch()
        for index, source in enumerate(cells):
            worker.request("run_cell", {"index": index, "source": source}, timeout=120)
        worker.kill()
    finally:
        launcher.close()


def stored(folder: Path) -> list[str]:
    """The module names of the entries in `folder`."""
    return sorted(re.sub(r"-[0-9a-f]{64}-cache$", "", name) for name in os.listdir(folder)
                  if name.endswith("-cache"))


@pytest.mark.slow
@pytest.mark.parametrize("strategy,isolation", LAUNCHERS, ids=["-".join(pair) for pair in LAUNCHERS])
def test_a_student_worker_sees_no_cache_folder_and_gets_its_own_programs_by_key(strategy, isolation, tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir()
    warm(folder, [CELL], {0: [1, 2, 3]})
    assert [name for name in stored(folder) if "lambda" in name], stored(folder)
    launcher = make_launcher(WorkerOptions("jax", LIMITS, compile_cache=str(folder), isolation=isolation),
                             strategy=strategy)
    try:
        worker = launcher.launch()
        worker.request("run_cell", {"index": 0, "source": CELL + PEEK}, timeout=120)
        seen = worker.request("call", {"function": "peek", "args": [str(folder)], "kwargs": {}},
                              timeout=60)["value"]
        assert seen["configured"] is None and seen["folder_of_the_cache"] == "None"
        assert seen["listed"] in ("PermissionError", "FileNotFoundError")  # Landlock; not mounted
        assert seen["read"] in ("PermissionError", "FileNotFoundError")
        assert worker.cache_server.served >= 1, "the program it built was the warm-up's: served by key"
        # A program of its own the warm-up never compiled (the same function at another shape):
        # asked for by its key, and answered with nothing.
        asked, served = worker.cache_server.asked, worker.cache_server.served
        worker.request("run_cell", {"index": 1, "source": "other = double(jnp.ones(6))\n"}, timeout=120)
        assert worker.cache_server.asked > asked and worker.cache_server.served == served
        worker.kill()
    finally:
        launcher.close()


@pytest.mark.slow
def test_the_warm_up_stores_programs_of_given_lines_only(tmp_path):
    """Cell 0 is given (its three lines); cell 1 is an answer: its own program, the given
    `double` called at a shape the answer chose, and an eager operation, are not stored. Cell 2
    is given again, but line 2 (an eager operation on the answer's value) is not a given line."""
    folder = tmp_path / "cache"
    folder.mkdir()
    answer = ("@jax.jit\ndef secret(x):\n    return jnp.cumsum(x[::-1])\nanswer = secret(jnp.ones(7))\n"
              "double(jnp.ones(11))\nflipped = jnp.flip(jnp.ones(13))\n")
    given = "shown = double(jnp.ones(5))\nlast = jnp.sin(answer)\n"
    warm(folder, [CELL, answer, given], {0: [1, 2, 3], 1: [], 2: [1]})
    names = stored(folder)
    assert [name for name in names if "lambda" in name] == ["jit__lambda"], names  # at shape (5,) only
    assert not [name for name in names if re.search("secret|cumsum|flip|sin", name)], names


def test_given_lines_are_those_of_the_release_outside_solution_regions():
    from rlcourse.course.submission import CodeCell
    from rlcourse.grading.pipeline import given_lines

    class Cells:
        cells = (CodeCell(3, "answer", "\n\nx = rollout(z)\n### BEGIN SOLUTION\ny = x + 1\n"
                                          "### END SOLUTION\nprint(y)\n"),
                 CodeCell(4, "given", "y = x + 1\n"))
    released = {"x = rollout(z)", "print(y)", "y = x + 1", "### BEGIN SOLUTION"}
    # IPython drops the two leading blank lines, as the worker compiles the cell: x is line 1.
    # Keyed as the worker names the cells' code: the cell at index 3 is "<cell 4>".
    assert given_lines(Cells, released) == {4: [1, 5], 5: [1]}


@pytest.mark.slow
def test_the_reference_run_stores_nothing_of_the_instructor_s_answers(tmp_path):
    """ps1's warm-up in a copy of the course: the given rollout is stored, and no stored program
    records a function of the answers (the HLO of each entry names every Python function it was
    traced through)."""
    from course_copy import copy_course
    from jax._src import compilation_cache as cc, xla_bridge
    from jax._src.lib import xla_client as xc

    from rlcourse.course.directory import Course
    from rlcourse.grading.pipeline import Grader

    course = Course(copy_course(tmp_path / "course", "ps1"))
    with Grader(course.assignment("ps1"), workers=False, log=lambda message: None) as grader:
        folder = Path(grader._cache_dir)
    assert "jit__rollout" in stored(folder)
    backend = xla_bridge.get_backend()
    devices = xc.DeviceList(tuple(backend.local_devices()[:1]))
    answers = ("returns_to_go", "policy_loss", "exact_return", "finite_horizon_values", "one_more_step")
    for path in folder.glob("*-cache"):
        program, _ = cc.extract_executable_and_time(cc.decompress_executable(path.read_bytes()))
        text = backend.deserialize_executable(program, devices, xc.CompileOptions()).hlo_modules()[0].to_string()
        functions = re.findall(r'^\d+ "([^"]+)"$', text, re.M)
        assert not [name for name in functions if name.split(".")[0] in answers], (path.name, functions)


def test_a_served_worker_that_loses_the_grader_compiles_on(tmp_path):
    """ServedCache: any failure of the conversation is a miss, never an error of the student."""
    pytest.importorskip("jax")
    from rlcourse.worker.compile_cache import served_cache_class

    ours, theirs = socket.socketpair()
    cache = served_cache_class()(theirs)
    answer = threading.Thread(target=lambda: (ours.recv(200), ours.sendall(LENGTH.pack(5) + b"abc"), ours.close()))
    answer.start()
    assert cache.get(KEY) is None  # 3 of 5 bytes, then the grader hung up
    answer.join()
    assert cache.get(KEY) is None and cache.get("../" + KEY) is None
