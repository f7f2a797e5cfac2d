"""UMAP imported with its numba kernels compiled once per cache folder instead of once per process.

Most of umap-learn's kernels are `numba.njit` without `cache=True`, so every fresh process compiles them again
on its first fit (measured on this machine: 8-13 s, while the fit itself takes under a second). `load_umap`
imports umap with `cache=True` as the default of `numba.njit`/`numba.jit` for the duration of the import and
numba's cache folder pointed at `<memory home>/cache/numba` (or `NUMBA_CACHE_DIR` when set), so the second
process loads the compiled kernels in a fraction of a second. numba keys each cached kernel by its source
file and that file's timestamp, so an upgraded umap recompiles. Once umap is imported this changes nothing.
"""

from __future__ import annotations

import functools
import logging
import sys
import threading
from pathlib import Path
from types import ModuleType

from memory_core.settings import NUMBA_CACHE_DIR

_LOCK = threading.Lock()
log = logging.getLogger(__name__)


def numba_cache_dir(cache_root: Path) -> Path:
    """Where compiled kernels live: `NUMBA_CACHE_DIR` when set, else `numba/` in the memory home's cache."""
    configured = NUMBA_CACHE_DIR.get()
    return Path(configured).expanduser() if configured else Path(cache_root) / "numba"


def _caching(decorator):
    @functools.wraps(decorator)
    def wrapped(*args, **kwargs):
        kwargs.setdefault("cache", True)
        return decorator(*args, **kwargs)

    return wrapped


def load_umap(cache_dir: Path | None = None) -> ModuleType:
    """The `umap` module; when this call is the one importing it and `cache_dir` is given, its kernels are
    compiled into (and later loaded from) `cache_dir`."""
    with _LOCK:
        if "umap" in sys.modules or cache_dir is None:
            import umap

            return umap
        import numba
        import pynndescent  # noqa: F401  (caches its own kernels; imported before the defaults change)

        cache_dir = Path(cache_dir)
        cache_dir.mkdir(parents=True, exist_ok=True)
        saved = numba.config.CACHE_DIR, numba.njit, numba.jit
        numba.config.CACHE_DIR = str(cache_dir)
        numba.njit, numba.jit = _caching(numba.njit), _caching(numba.jit)
        try:
            import umap
        finally:
            numba.config.CACHE_DIR, numba.njit, numba.jit = saved
        return umap


def start_loading_umap(cache_dir: Path | None) -> threading.Thread:
    """`load_umap(cache_dir)` on a daemon thread: a build imports umap (and scikit-learn, numba, pynndescent:
    ~1.5 s of one core) while its concept loop runs, not at the start of the topics stage, which takes the
    same lock and finds it imported. A failed import is left to the stage to raise again."""

    def load() -> None:
        try:
            load_umap(cache_dir)
        except Exception as exc:  # the topics stage imports it again and reports the error there
            log.warning("importing umap ahead failed (the topics stage retries): %s", exc)

    thread = threading.Thread(target=load, name="umap-import", daemon=True)
    thread.start()
    return thread
