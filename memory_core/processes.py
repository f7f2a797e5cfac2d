"""Is a process (of a run, of a lock holder) still the one that started it?

A process is named by (host, pid, start time). The start time tells a live process from a later one that
reuses its pid; it is read from /proc on Linux (None elsewhere: then only the pid is checked).
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from functools import cache

# two readings of the same process's start time differ by rounding only
_SAME_START_S = 1.0


@cache
def _boot_time() -> float | None:
    try:
        with open("/proc/stat", encoding="ascii") as fp:
            for line in fp:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def _stat_fields(pid: int) -> list[str] | None:
    """/proc/<pid>/stat after the command name (which may hold spaces and parentheses): field 3 onward."""
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8", errors="replace") as fp:
            raw = fp.read()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()


def process_start_time(pid: int) -> float | None:
    """Epoch seconds at which process `pid` started, or None when unknown (not Linux, or no such pid)."""
    fields, boot = _stat_fields(pid), _boot_time()
    if not fields or boot is None or len(fields) < 20:
        return None
    return round(boot + int(fields[19]) / os.sysconf("SC_CLK_TCK"), 2)


def pid_alive(pid: int) -> bool:
    """A process with this pid exists and is not a zombie (a killed child its parent has not reaped)."""
    if pid <= 0:
        return False
    fields = _stat_fields(pid)
    if fields is not None:
        return fields[0] not in ("Z", "X")
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return False
    return True


@dataclass(frozen=True)
class ProcessIdentity:
    host: str
    pid: int
    started: float | None  # epoch seconds (None: unknown)

    @classmethod
    def current(cls) -> ProcessIdentity:
        pid = os.getpid()
        return cls(socket.gethostname(), pid, process_start_time(pid))

    @property
    def local(self) -> bool:
        return self.host == socket.gethostname()

    def alive(self) -> bool | None:
        """True/False on this host; None for another host's process (it cannot be checked from here)."""
        if not self.local:
            return None
        if not pid_alive(self.pid):
            return False
        if self.started is None:
            return True
        now = process_start_time(self.pid)
        return now is None or abs(now - self.started) < _SAME_START_S

    def as_dict(self) -> dict:
        return {"host": self.host, "pid": self.pid, "started": self.started}

    @classmethod
    def from_dict(cls, value: object) -> ProcessIdentity | None:
        if not isinstance(value, dict):
            return None
        try:
            started = value.get("started")
            return cls(str(value["host"]), int(value["pid"]), float(started) if started is not None else None)
        except (KeyError, TypeError, ValueError):
            return None
