"""Streaming readers: the elements of a top-level JSON array one at a time, and JSONL lines.

Invalid UTF-8 does not fail the file: bytes that do not decode become lone surrogates
(`surrogateescape`), and the record holding them is dead-lettered by the parser. A truncated or
malformed document fails the whole file with an `InputError` naming the file and the byte offset.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from pathlib import Path

from memory_core.errors import InputError

_DECODER = json.JSONDecoder()
_WS = " \t\r\n"
CHUNK = 1 << 20


class _TextStream:
    """Incremental UTF-8 text over a binary file, with a consumed-prefix buffer."""

    def __init__(self, path: Path):
        self.path = path
        self.fp = path.open("rb")
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="surrogateescape")
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.consumed = 0  # chars dropped from the front of buf
        self.first = True

    def fill(self, size: int = CHUNK) -> bool:
        if self.eof:
            return False
        data = self.fp.read(size)
        text = self.decoder.decode(data, final=not data)
        if self.first:
            text = text.lstrip("\ufeff")
            self.first = False
        if not data:
            self.eof = True
        if self.pos > CHUNK:  # drop what is parsed so memory stays bounded
            self.consumed += self.pos
            self.buf = self.buf[self.pos :]
            self.pos = 0
        self.buf += text
        return bool(text) or not self.eof

    def skip_ws(self) -> str | None:
        """Next non-whitespace char (not consumed), or None at end of input."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self.fill():
                return None

    def close(self) -> None:
        self.fp.close()


def _fail(path: Path, stream: _TextStream, problem: str) -> InputError:
    return InputError(f"{path}: {problem} (at char {stream.consumed + stream.pos})")


def peek_top_level(path: Path) -> str | None:
    """The first non-whitespace character of the document ('[' or '{'), or None for an empty file."""
    stream = _TextStream(path)
    try:
        return stream.skip_ws()
    finally:
        stream.close()


def iter_json_array(path: Path, allow_object: bool = False) -> Iterator[object]:
    """Yield each element of a top-level JSON array without loading the whole document.

    With `allow_object`, a top-level object is yielded as the single element.
    """
    stream = _TextStream(path)
    try:
        head = stream.skip_ws()
        if head is None:
            raise InputError(f"{path}: the file is empty")
        if head == "{" and allow_object:
            yield _decode_value(path, stream)
            if stream.skip_ws() is not None:
                raise _fail(path, stream, "unexpected data after the top-level object")
            return
        if head != "[":
            shape = "an object" if head == "{" else f"{head!r}"
            raise InputError(f"{path}: expected a JSON array at the top level, found {shape}")
        stream.pos += 1
        expect_value = True
        first = True
        while True:
            char = stream.skip_ws()
            if char is None:
                raise _fail(path, stream, "truncated JSON: the top-level array is not closed")
            if char == "]" and (first or not expect_value):
                stream.pos += 1
                break
            if not expect_value:
                if char != ",":
                    raise _fail(
                        path, stream, f"malformed JSON: expected ',' or ']' between elements, found {char!r}"
                    )
                stream.pos += 1
                expect_value = True
                continue
            yield _decode_value(path, stream)
            first = False
            expect_value = False
        if stream.skip_ws() is not None:
            raise _fail(path, stream, "unexpected data after the top-level array")
    finally:
        stream.close()


def _decode_value(path: Path, stream: _TextStream) -> object:
    size = CHUNK
    while True:
        try:
            value, end = _DECODER.raw_decode(stream.buf, stream.pos)
        except json.JSONDecodeError as exc:
            if stream.eof:
                runs_to_end = exc.msg.startswith("Unterminated string") or exc.pos >= len(stream.buf.rstrip())
                problem = "truncated JSON" if runs_to_end else f"malformed JSON: {exc.msg}"
                raise InputError(f"{path}: {problem} (at char {stream.consumed + exc.pos})") from None
            stream.fill(size)
            size = min(size * 2, 64 * CHUNK)  # large records: grow reads so re-parsing stays linear-ish
            continue
        except ValueError:  # an integer past Python's digit limit: the document cannot be read
            raise _fail(path, stream, "malformed JSON: a number with too many digits") from None
        # a number at the very end of the buffer may continue in the next chunk
        if end >= len(stream.buf) and not stream.eof and isinstance(value, int | float):
            stream.fill(size)
            continue
        stream.pos = end
        return value


def iter_jsonl(path: Path) -> Iterator[tuple[int, object | None, str | None, bytes]]:
    """Yield (line_number, value, error, raw_line) for each non-blank line of a JSONL file."""
    with path.open("rb") as fp:
        for number, raw in enumerate(fp, start=1):
            if number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw = raw[len(codecs.BOM_UTF8) :]
            if not raw.strip():
                continue
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield number, None, f"invalid UTF-8 at byte {exc.start}", raw
                continue
            try:
                value = json.loads(line)
            except json.JSONDecodeError as exc:
                yield number, None, f"malformed JSON: {exc.msg} at char {exc.pos}", raw
            except ValueError:  # an integer past Python's digit limit
                yield number, None, "malformed JSON: a number with too many digits", raw
            except RecursionError:
                yield number, None, "malformed JSON: nested too deeply to read", raw
            else:
                yield number, value, None, raw
