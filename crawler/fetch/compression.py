"""Keep Scrapy from guessing the charset of still-compressed bodies.

``HttpCompressionMiddleware`` decompresses with ``response.replace(body=...)``, which
reads every attribute of the old response first, ``encoding`` included: for an
``HtmlResponse`` whose Content-Type names no charset, that runs charset detection over
the *gzip bytes*, only to throw the answer away. This middleware sits just before it in
``process_response`` order and hands it a plain ``Response`` for a compressed body;
Scrapy's middleware then picks the response class and the encoding from the
decompressed body, exactly as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy.http import Response, TextResponse

if TYPE_CHECKING:
    from scrapy.http import Request


class CompressedAsPlainResponseMiddleware:
    def process_response(self, request: Request, response: Response) -> Response:
        if isinstance(response, TextResponse) and response.headers.get(b"Content-Encoding"):
            return Response(**{name: getattr(response, name) for name in Response.attributes})
        return response
