"""A worker's scratch folder: made for it, measured while it runs, and removed after it.

The folder is the student's: its contents are counted without following links (the disk quota
where the kernel does not enforce one) and removed without trusting a mode or a link in it."""
from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from pathlib import Path


def scratch_dir(parent: Path | None = None) -> Path:
    return Path(tempfile.mkdtemp(prefix="rlcourse-worker-", dir=parent))


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
