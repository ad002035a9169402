"""Tool vectors on local disk (`DiskVectorCache`), so that a restarted process (or the next pod of
a rolling deploy on the same volume) does not embed its catalogs again.

Each entry is one file whose name is the SHA-256 of its model key and digest: processes sharing the
directory never write the same file in place (an entry is written to a temporary file and renamed
over its name, which is atomic), so no locks are needed and a reader sees a whole entry or none. An
entry holds its dimensions and a BLAKE2b checksum of its address and contents: a torn, truncated,
flipped or misplaced file reads as absent, and the vector computed instead replaces it.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import struct
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

logger = logging.getLogger(__name__)


_MAGIC = b"tsv1"
_HEADER = struct.Struct("<4sI")  # magic, dimensions
_CHECKSUM_BYTES = 16
_MAX_ENTRY_BYTES = 1 << 26
"""More than any entry takes (a catalog's neighbourhoods, `search.isolation`, take 80 bytes a
tool): a longer file is damaged, and reads as such."""
_TOUCH_SECONDS = 86_400.0
"""A read entry is marked used (its mtime) at most once a day: eviction is least recently used
to within a day, at one `utime` per entry a day."""
_STALE_TEMPORARY_SECONDS = 3600.0
"""A temporary file this old was left by a writer that died: pruning removes it."""
_PRUNED_SHARE = 0.8
"""Pruning removes the least recently used entries until the cache is at this share of its bound."""


class DiskVectorCache:
    """Tool vectors in files under `directory`, at most about `max_bytes` of disk (least recently
    used removed past it); safe to share between threads and processes."""

    def __init__(self, directory: str | Path, max_bytes: int) -> None:
        self.directory = Path(directory) / _MAGIC.decode()
        self._root = str(self.directory)  # entry paths as strings: a restart reads thousands
        self.max_bytes = max_bytes
        self.corrupt_entries = 0
        """Entries found damaged and ignored (each is replaced when its vector is computed again)."""
        self._lock = threading.Lock()
        self._bytes: int | None = None
        """Disk this process believes the cache takes: measured at its first write, then counted."""

    def get_many(self, model: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        found = {}
        corrupt = 0
        now = time.time()
        for digest in digests:
            address = _address(model, digest)
            path = self._path(address)
            try:
                raw, modified = _read(path)
            except OSError:
                continue
            vector = _decoded(address, raw)
            if vector is None:
                corrupt += 1
                continue
            found[digest] = vector
            if now - modified > _TOUCH_SECONDS:
                with contextlib.suppress(OSError):  # removed meanwhile, or a read-only volume
                    os.utime(path)
        if corrupt:
            with self._lock:
                self.corrupt_entries += corrupt
            logger.warning("%d damaged vector cache entries ignored (they are computed again)", corrupt)
        return found

    def put_many(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        written = 0
        for digest, vector in vectors.items():
            address = _address(model, digest)
            path = self._path(address)
            try:
                written += _write(path, _encoded(address, vector))
            except OSError as error:
                # A full or read-only disk costs the cache, never the search.
                logger.warning("the vector cache could not be written: %s", error.strerror)
                break
        self._count(written)

    def _path(self, address: bytes) -> str:
        name = address.hex()
        return f"{self._root}/{name[:2]}/{name}"

    def _count(self, written: int) -> None:
        with self._lock:
            if self._bytes is None:
                self._bytes = _disk_bytes(self.directory)
            else:
                self._bytes += written
            if self._bytes <= self.max_bytes:
                return
            self._bytes = _prune(self.directory, int(self.max_bytes * _PRUNED_SHARE))


def _address(model: str, digest: str) -> bytes:
    return hashlib.sha256(f"{model}\n{digest}".encode()).digest()


def _checksum(address: bytes, body: bytes) -> bytes:
    return hashlib.blake2b(address + body, digest_size=_CHECKSUM_BYTES).digest()


def _encoded(address: bytes, vector: np.ndarray) -> bytes:
    values = np.ascontiguousarray(vector, dtype="<f4").ravel()
    body = _HEADER.pack(_MAGIC, len(values)) + values.tobytes()
    return body + _checksum(address, body)


def _decoded(address: bytes, raw: bytes) -> np.ndarray | None:
    """The entry's vector, or None when it is not a whole, undamaged entry of this address."""
    if len(raw) < _HEADER.size + _CHECKSUM_BYTES:
        return None
    magic, dimensions = _HEADER.unpack_from(raw)
    body, checksum = raw[:-_CHECKSUM_BYTES], raw[-_CHECKSUM_BYTES:]
    if (
        magic != _MAGIC
        or dimensions == 0
        or len(body) != _HEADER.size + 4 * dimensions
        or checksum != _checksum(address, body)
    ):
        return None
    return np.frombuffer(body, dtype="<f4", offset=_HEADER.size)


def _read(path: str) -> tuple[bytes, float]:
    """The file's contents and modification time."""
    descriptor = os.open(path, os.O_RDONLY)
    try:
        status = os.fstat(descriptor)
        # One byte past the size it had: a file that grew meanwhile reads as damaged, not cut short.
        return os.read(descriptor, min(status.st_size + 1, _MAX_ENTRY_BYTES)), status.st_mtime
    finally:
        os.close(descriptor)


def _write(path: str, data: bytes) -> int:
    """Write `data` as the file `path` atomically; the disk it takes."""
    shard = os.path.dirname(path)
    os.makedirs(shard, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=shard, prefix=".", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            size = _allocated(os.fstat(file.fileno()))
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    return size


def _allocated(status: os.stat_result) -> int:
    return status.st_blocks * 512


def _entries(directory: Path) -> list[tuple[float, int, str]]:
    """(mtime, disk bytes, path) of every file in the cache's shards."""
    found = []
    for shard in _scan(directory):
        if shard.is_dir(follow_symlinks=False):
            for entry in _scan(Path(shard.path)):
                try:
                    status = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                found.append((status.st_mtime, _allocated(status), entry.path))
    return found


def _scan(directory: Path) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as entries:
            return list(entries)
    except OSError:
        return []


def _disk_bytes(directory: Path) -> int:
    return sum(size for _, size, _ in _entries(directory))


def _prune(directory: Path, target: int) -> int:
    """Remove the least recently used entries (and stale temporary files) until the cache takes at
    most `target` bytes; the bytes left. Other processes may prune at once: a file already gone is
    simply skipped, and a reader holding one open still reads it whole."""
    entries = sorted(_entries(directory))
    total = sum(size for _, size, _ in entries)
    stale = time.time() - _STALE_TEMPORARY_SECONDS
    for modified, size, path in entries:
        if path.endswith(".tmp"):
            if modified >= stale:
                continue  # another writer's, being written
        elif total <= target:
            break
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size
    logger.info("the vector cache was pruned to %d MB", total // 1_000_000)
    return total
