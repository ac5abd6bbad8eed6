"""Writing files so that a crash leaves either the old content or the new, never a part of it;
and hashing a folder's files, for the fingerprints that say whether something changed."""
from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


@contextlib.contextmanager
def _flushed_temporary(path: Path, data: bytes):
    """`data` in a temporary file beside `path`, flushed to disk and readable by all: the caller
    renames or links it into place; it is removed on the way out, whatever happened."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
            stream.flush()
            os.fsync(stream.fileno())
        os.chmod(temporary, 0o644)
        yield temporary
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temporary)


def write_atomic(path: Path, data: bytes | str) -> Path:
    """Write to a temporary file beside `path`, flush it to disk, then rename it over `path`."""
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    with _flushed_temporary(path, data) as temporary:
        os.replace(temporary, path)
    return path


def write_new(path: Path, data: bytes) -> Path:
    """Write a new file atomically, under `path` or, if that is taken, `path` with -2, -3...
    (a hard link from a finished temporary file: never over an existing one)."""
    path = Path(path)
    with _flushed_temporary(path, data) as temporary:
        for attempt in range(1, 100):
            target = path if attempt == 1 else path.with_name(f"{path.stem}-{attempt}{path.suffix}")
            try:
                os.link(temporary, target)
                return target
            except FileExistsError:
                continue
        raise FileExistsError(f"{path}: no free name beside it")


def files_under(folder: Path, suffixes: tuple[str, ...] | None = None) -> list[Path]:
    """Every file under `folder` (none if it is missing), in a stable order, without Python's
    bytecode caches; only those ending in `suffixes` when given."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    return [path for path in sorted(folder.rglob("*"))
            if path.is_file() and "__pycache__" not in path.parts
            and (suffixes is None or path.suffix in suffixes)]


def digest_files(digest, paths, *, relative_to: Path):
    """Feed each file's path (relative to `relative_to`) and bytes to `digest`, so renaming a
    file changes the fingerprint as editing it does; a missing file counts as `<missing>`."""
    for path in paths:
        digest.update(str(path.relative_to(relative_to)).encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"<missing>")
    return digest
