"""The crawl's TLS policy: certificates verified against the system's trust store and
the host name, as curl, wget and Python do (docs/crawling.md, "HTTPS").

One policy, :meth:`TlsPolicy.ssl_context`, for everything the product fetches: Scrapy's
downloads (:class:`crawler.fetch.renderhandler.RenderDownloadHandler`), the start URL's
pre-flight (:mod:`crawler.fetch.origin`) and IndexNow's key check. Not Scrapy's
``DOWNLOAD_VERIFY_CERTIFICATES`` alone: it verifies against the system's store only,
with no way to add a CA file (``SITEMAP_CA_FILE``).

Settings: ``SITEMAP_TLS_VERIFY``, ``SITEMAP_CA_FILE``.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

#: OpenSSL's verify codes (``X509_V_ERR_*``) -> what a person is told.
_VERIFY_CODES = {
    9: "certificate not yet valid",
    10: "expired certificate",
    18: "self-signed certificate",
    19: "self-signed certificate in the chain (unknown issuer)",
    20: "unknown issuer (no trusted CA signed the certificate)",
    21: "unknown issuer (no trusted CA signed the certificate)",
    23: "revoked certificate",
    62: "certificate for another host name",
    64: "certificate for another IP address",
}

#: What the error line says a person can do about a certificate failure.
INSECURE_HINT = (
    "--insecure crawls it anyway (credentials are then not sent), --ca-file PEM trusts its CA"
)


@dataclass(frozen=True)
class TlsPolicy:
    """Whether certificates are verified, and a CA file trusted besides the system's."""

    verify: bool = True
    ca_file: str | None = None

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> TlsPolicy:
        return cls(settings.getbool("SITEMAP_TLS_VERIFY", True), settings.get("SITEMAP_CA_FILE"))

    def ssl_context(self) -> ssl.SSLContext:
        """A context for Python's ``ssl``: aiohttp's, http.client's and urllib's."""
        context = ssl.create_default_context()
        if not self.verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif self.ca_file:
            context.load_verify_locations(cafile=self.ca_file)
        return context


def check_ca_file(path: str) -> str | None:
    """Why *path* cannot be a CA file (one line), or None."""
    try:
        ssl.create_default_context().load_verify_locations(cafile=path)
    except FileNotFoundError:
        return f"--ca-file {path}: no such file"
    except (ssl.SSLError, OSError, ValueError) as e:
        return f"--ca-file {path}: not PEM certificates ({e})"
    return None


def certificate_problem(error: BaseException) -> str | None:
    """What is wrong with a certificate that failed verification (self-signed, expired,
    wrong name, unknown issuer), or None when *error* is not that."""
    if isinstance(error, ssl.SSLCertVerificationError):
        code = error.verify_code
        return _VERIFY_CODES.get(code, error.verify_message or "certificate not trusted")
    return None
