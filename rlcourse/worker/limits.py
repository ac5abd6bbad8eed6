"""What one worker may use: memory, time, files, processes, and the size of its answers.

A leaf module: the course's configuration (`assignment.toml`'s [limits]) builds these, and the
launchers hand them to each worker, so the course layer can name limits without importing how
workers are started."""
from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Limits:
    """Resources one worker may use. Defaults suit the course's small CPU-only assignments."""

    memory_bytes: int = 6 << 30
    """Address-space limit (RLIMIT_AS). JAX reserves generously, so this is above real use."""
    resident_bytes: int = 3 << 30
    """Memory the worker's processes may hold, shared memory and memfd files included (a memory
    cgroup, where the machine has one: rlcourse.worker.cgroup.MemoryCgroup)."""
    cpu_seconds: int = 900
    """CPU time for the whole worker (RLIMIT_CPU); the per-call wall clock is usually hit first."""
    file_bytes: int = 64 << 20
    """Largest file the worker may write (RLIMIT_FSIZE), its captured output included."""
    open_files: int = 256
    """Open file descriptors (RLIMIT_NOFILE)."""
    cell_seconds: float = 120.0
    """Wall clock for running one notebook cell."""
    call_seconds: float = 60.0
    """Wall clock for one grader call into the submission."""
    submission_seconds: float = 900.0
    """Wall clock for one submission's cells and calls together, restarts included."""
    reply_bytes: int = 32 << 20
    """Largest reply accepted from the worker."""
    output_chars: int = 4000
    """How much of the worker's own prints a report may quote (the tail)."""
    processes: int = 128
    """Processes and threads the worker may have at once (`pids.max` of its cgroup; also
    RLIMIT_NPROC when it runs as its own user). JAX alone starts about 20 threads."""
    scratch_bytes: int = 256 << 20
    """Disk the worker's files may take in all (RLIMIT_FSIZE bounds each file, not their sum)."""
    scratch_files: int = 2000
    """Files and directories the worker may create."""
