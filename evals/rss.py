"""Peak resident memory of this process, per measured span where Linux lets us reset the high-water mark."""

from __future__ import annotations

import resource
from pathlib import Path

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kib(field: str) -> int | None:
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


class PeakRss:
    """`reset()` then `read()`: the peak RSS in bytes since the reset (VmHWM after writing 5 to clear_refs).

    Without /proc (or when the reset is refused) `read()` is the process's lifetime peak (getrusage), and
    `note` says so.
    """

    def __init__(self):
        self.resettable = _status_kib("VmHWM") is not None and self._try_reset()
        self.note = (
            "peak since each method's build started (VmHWM reset)"
            if self.resettable
            else "process lifetime peak (getrusage)"
        )

    @staticmethod
    def _try_reset() -> bool:
        try:
            _CLEAR_REFS.write_text("5")
            return True
        except OSError:
            return False

    def reset(self) -> None:
        if self.resettable:
            self._try_reset()

    def read(self) -> int:
        if self.resettable:
            kib = _status_kib("VmHWM")
            if kib is not None:
                return kib * 1024
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
