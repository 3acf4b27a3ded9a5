"""A disk that fills up, for the subprocesses of tests/faults/test_record_disk_full.py (put on their
PYTHONPATH; nothing in wtb_local knows of it).

`WTB_FAULT_FULL_AFTER=N`: the result file's first N fsyncs succeed; from the next one on the disk is full,
and every fsync of a file whose name starts with one of `WTB_FAULT_FULL_FILES` (comma-separated; default
the result file) fails with ENOSPC. A failed fsync also cuts its file back to its last fsynced size: what
was written since never reached the disk.
"""

import errno
import os

_AFTER = os.environ.get("WTB_FAULT_FULL_AFTER")
_RESULT = "Wild-Tool-Bench_result.jsonl"

if _AFTER is not None:
    _files = tuple(os.environ.get("WTB_FAULT_FULL_FILES", _RESULT).split(","))
    _real_fsync = os.fsync
    _state = {"commits": 0, "full": False}
    _synced: dict[int, int] = {}  # inode -> size at its last good fsync

    def _fsync(fd: int) -> None:
        try:
            name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            name = ""
        if name == _RESULT and not _state["full"]:
            _state["commits"] += 1
            _state["full"] = _state["commits"] > int(_AFTER)
        stat = os.fstat(fd)
        if _state["full"] and name.startswith(_files):
            if stat.st_ino in _synced:
                os.ftruncate(fd, _synced[stat.st_ino])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        _real_fsync(fd)
        _synced[stat.st_ino] = stat.st_size

    os.fsync = _fsync
