"""A worker's scratch folder: made for it, measured while it runs, and removed after it.

The folder is the student's: its contents are counted without following links (the disk quota
where the kernel does not enforce one) and removed without trusting a mode or a link in it."""
from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import tempfile
from pathlib import Path

RUN_PREFIX = "rlcourse-run-"
_HELD: dict[Path, int] = {}
"""Each run folder this process made -> the descriptor of its lock file, locked while it lives."""


def scratch_dir(parent: Path | None = None) -> Path:
    return Path(tempfile.mkdtemp(prefix="rlcourse-worker-", dir=parent))


def run_folder() -> Path:
    """A new run folder (`rlcourse-run-*` in the temporary folder) beside a lock file this
    process holds (`flock`) for as long as it lives. A process killed outright (`kill -9` of a
    service, the OOM killer) never removes its folder; the kernel drops its lock, and the next
    run folder made on this machine removes every folder whose lock nobody holds
    (`remove_abandoned_run_folders`). The lock file is locked under a hidden name first, then
    renamed, so no one ever finds an unheld lock beside a folder still in use."""
    remove_abandoned_run_folders()
    folder = Path(tempfile.mkdtemp(prefix=RUN_PREFIX))
    staging = folder.with_name(f".{folder.name}.lock")
    handle = os.open(staging, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    fcntl.flock(handle, fcntl.LOCK_EX)
    os.rename(staging, _lock_of(folder))
    _HELD[folder] = handle
    return folder


def remove_run_folder(folder: Path) -> None:
    """Remove a run folder this process made, then its lock."""
    remove_scratch(folder)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_lock_of(folder))
    handle = _HELD.pop(Path(folder), None)
    if handle is not None:
        os.close(handle)


def remove_abandoned_run_folders(parent: Path | None = None) -> list[Path]:
    """Remove the run folders under `parent` (default: the temporary folder) whose lock no live
    process holds, and return them. Only lock files of this user count: a file another user
    planted names no folder to remove (folders of rlcourse versions without locks are left)."""
    removed = []
    for lock in sorted(Path(parent or tempfile.gettempdir()).glob(f"{RUN_PREFIX}*.lock")):
        try:
            handle = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            info = os.fstat(handle)
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
                continue
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its process is alive
            folder = lock.with_name(lock.name.removesuffix(".lock"))
            remove_scratch(folder)  # rmtree: a link in its place is refused, never followed
            with contextlib.suppress(FileNotFoundError):
                os.unlink(lock)
            removed.append(folder)
        finally:
            os.close(handle)
    return removed


def _lock_of(folder: Path) -> Path:
    return Path(folder).with_name(f"{Path(folder).name}.lock")


def remove_scratch(path: Path) -> None:
    """Delete a stopped worker's scratch directory now, whatever the worker left in it: links
    are removed, never followed, and folders it made unreadable are opened up (by descriptor,
    O_NOFOLLOW) and removed on a second try. (Where the worker had its own tmpfs, its files went
    with its mount namespace and this folder is empty.)"""
    for attempt in range(2):
        try:
            shutil.rmtree(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            if attempt:
                return
        _open_up(path)
        for folder, subfolders, _ in os.walk(path):
            for name in subfolders:
                _open_up(os.path.join(folder, name))


def _open_up(folder) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            os.fchmod(fd, 0o700)
        finally:
            os.close(fd)


class DiskQuotaExceeded(Exception):
    """A worker's files take more disk than its limits allow."""


def disk_use(root: Path, *, max_files: int) -> tuple[int, int]:
    """(entries, bytes on disk) under `root`, counted without following links; stops counting
    past `max_files` entries. Bytes are allocated blocks, so a sparse file costs what it uses."""
    entries = used = 0
    folders = [root]
    while folders and entries <= max_files:
        try:
            listing = os.scandir(folders.pop())
        except OSError:
            continue
        with listing:
            for entry in listing:
                entries += 1
                try:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    used += entry.stat(follow_symlinks=False).st_blocks * 512
                except OSError:
                    pass
    return entries, used
