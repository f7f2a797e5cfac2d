"""The explorer's access rule, as Jupyter's: the URL printed at start carries a random token; the first
request with it sets a cookie (HttpOnly, SameSite=Strict) and is redirected to the same URL without the
token, so it does not linger in the address bar or the history. Every other request needs the cookie."""

from __future__ import annotations

import hmac
import secrets
from http.cookies import SimpleCookie
from urllib.parse import parse_qsl, urlencode

COOKIE = "memory_os_explorer"
TOKEN_PARAM = "token"


def new_token() -> str:
    return secrets.token_urlsafe(24)


class TokenGate:
    """ASGI middleware: a request without the token (in the query or the cookie) gets 403 and one line
    saying how to get in; static files need it too (nothing is served to another local user)."""

    def __init__(self, app, token: str):
        self.app = app
        self.token = token

    def _valid(self, value: str | None) -> bool:
        return value is not None and hmac.compare_digest(value.encode(), self.token.encode())

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True))
        if self._valid(query.get(TOKEN_PARAM)):
            rest = urlencode([(k, v) for k, v in query.items() if k != TOKEN_PARAM])
            location = scope.get("root_path", "") + scope["path"] + (f"?{rest}" if rest else "")
            cookie = f"{COOKIE}={self.token}; Path=/; HttpOnly; SameSite=Strict"
            await _respond(
                send, 303, b"", [(b"location", location.encode()), (b"set-cookie", cookie.encode())]
            )
            return
        if self._valid(_cookie(scope)):
            await self.app(scope, receive, send)
            return
        body = (
            b"Open the explorer through the URL `memory-os explore` printed: it carries the access token.\n"
        )
        await _respond(send, 403, body, [(b"content-type", b"text/plain; charset=utf-8")])


def _cookie(scope) -> str | None:
    for name, value in scope.get("headers") or []:
        if name == b"cookie":
            jar = SimpleCookie()
            jar.load(value.decode("latin-1"))
            if COOKIE in jar:
                return jar[COOKIE].value
    return None


async def _respond(send, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
