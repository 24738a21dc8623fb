"""A gate in front of a test server: requests are held while a file exists.

A test that needs something to happen before a crawl gets under way (every worker
of a distributed crawl up, say) closes the gate (creates the file), waits for that
event, and opens it (removes the file); the held requests are then answered as
usual. Wrapped around ``tests/mockserver.py``'s and ``tests/nightlyserver.py``'s
sites (``--gate FILE``); an open gate costs nothing.
"""

from __future__ import annotations

import os
from typing import Any

from twisted.internet import reactor
from twisted.web import resource, server

#: How often a held request looks at the gate again.
LOOK_SECONDS = 0.05


class Leaf(resource.Resource):
    """A test site's resource: it answers every path itself, and writes to *log* (an
    open file) a line a request."""

    isLeaf = True

    def __init__(self, log: Any) -> None:
        super().__init__()
        self.log = log


class Gated(resource.Resource):
    """*site*, whose requests wait while the file *gate* exists."""

    isLeaf = True

    def __init__(self, site: resource.Resource, gate: str | None) -> None:
        super().__init__()
        self.site = site
        self.gate = gate

    def closed(self) -> bool:
        return self.gate is not None and os.path.exists(self.gate)

    def render(self, request: Any) -> bytes | int:
        if not self.closed():
            return self.site.render(request)  # type: ignore[no-any-return]
        gone: list[object] = []
        request.notifyFinish().addBoth(gone.append)  # the client gave up waiting

        def look() -> None:
            if gone:
                return
            if self.closed():
                reactor.callLater(LOOK_SECONDS, look)  # type: ignore[attr-defined]
                return
            body = self.site.render(request)
            if body is not server.NOT_DONE_YET:
                request.write(body)
                request.finish()

        reactor.callLater(LOOK_SECONDS, look)  # type: ignore[attr-defined]
        return server.NOT_DONE_YET
