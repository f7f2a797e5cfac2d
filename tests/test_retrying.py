"""`again_while`: the one retry the stores and the embedding cache use when another process is in the way."""

import sqlite3

import pytest

from memory_core.retrying import again_while

LOCKED = (sqlite3.OperationalError,), ("database is locked",)


def _failing(times: int, error: BaseException):
    calls = []

    def call():
        calls.append(1)
        if len(calls) <= times:
            raise error
        return len(calls)

    return call, calls


def test_a_lost_race_is_called_again_until_it_passes():
    call, calls = _failing(2, sqlite3.OperationalError("database is locked"))
    assert again_while(call, *LOCKED) == 3
    assert len(calls) == 3


def test_another_error_or_message_is_raised_at_once():
    call, calls = _failing(1, sqlite3.OperationalError("no such table: embeddings"))
    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        again_while(call, *LOCKED)
    call2, calls2 = _failing(1, ValueError("database is locked"))
    with pytest.raises(ValueError):
        again_while(call2, *LOCKED)
    assert len(calls) == len(calls2) == 1


def test_the_last_attempt_raises_what_it_got():
    call, calls = _failing(5, sqlite3.OperationalError("database is locked"))
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        again_while(call, *LOCKED, attempts=3)
    assert len(calls) == 3
