"""Errors a user can act on. Each message names the thing and the problem."""


class MemoryOSError(Exception):
    """Base class of errors raised on purpose by Memory OS."""


class InputError(MemoryOSError):
    """A whole input file (or argument) is unusable: nothing from it was written."""


class CorpusNotFoundError(MemoryOSError):
    """The corpus is not registered under this memory home."""


class CorpusLockedError(MemoryOSError):
    """Another run is writing the corpus (one writer per corpus)."""


class SchemaMismatchError(MemoryOSError):
    """A store was created by an older version and cannot be brought up to the current contract in place."""
