"""A memory cgroup per worker: memory the address-space limit does not see is capped too."""
import nbformat
import pytest

from rlcourse.grading.student import StudentCode
from rlcourse.course.submission import load_submission
from rlcourse.worker.cgroup import memory_parent, pids_parent
from rlcourse.worker.errors import WorkerError
from rlcourse.worker.launchers import WorkerOptions, make_launcher
from rlcourse.worker.limits import Limits

pytestmark = [pytest.mark.slow, pytest.mark.skipif(
    memory_parent() is None or pids_parent() is None,
    reason="no writable memory and pids cgroups on this machine")]

# memfd files are not mapped, so RLIMIT_AS never counts them; each stays under RLIMIT_FSIZE.
HOLDS = ("import os\nkeep = []\n"
         "def hold(files):\n"
         "    for _ in range(files):\n"
         "        fd = os.memfd_create('x')\n"
         "        os.posix_fallocate(fd, 0, 60 << 20)\n"
         "        keep.append(fd)\n"
         "    return sum(os.fstat(fd).st_blocks * 512 for fd in keep)\n"
         "def fine():\n    return 1\n")


def student(tmp_path, resident_bytes):
    launcher = make_launcher(WorkerOptions("numpy", Limits(cell_seconds=20, call_seconds=20,
                                                           resident_bytes=resident_bytes)))
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(HOLDS)]
    nbformat.write(notebook, tmp_path / "nb.ipynb")
    return StudentCode(load_submission(tmp_path / "nb.ipynb"), launcher), launcher


def test_memfd_files_past_the_cap_cost_the_worker_not_the_machine(tmp_path):
    code, launcher = student(tmp_path, 256 << 20)
    try:
        assert code.call("fine") == 1
        with pytest.raises(WorkerError) as error:
            code.call("hold", 10)  # 600 MB
        assert error.value.kind == "worker_crashed"
        assert "holding more than 256 MB of memory" in str(error.value)
        assert code.call("fine") == 1  # a fresh worker, under a fresh cap
    finally:
        code.close()
        launcher.close()


def test_under_the_cap_memfd_files_are_allowed(tmp_path):
    """The same call with a cap above it: what the cap, and nothing else, stops."""
    code, launcher = student(tmp_path, 2 << 30)
    try:
        assert code.call("hold", 10) == 10 * (60 << 20)
    finally:
        code.close()
        launcher.close()
