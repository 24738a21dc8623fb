"""Crawling one address, publishing for another (``--base-url``).

The *start prefix* is the start URL up to the last ``/`` of its path; the *public
prefix* is ``SITEMAP_BASE_URL`` (or the start prefix). Every published ``<loc>`` is the
crawled URL with the one replaced by the other; a canonical that points at a page's
public address is read back into crawl space (so it counts as self-canonical). With a
base URL, a same-host page outside the start prefix is crawled but not listed.
"""

from __future__ import annotations

from dataclasses import dataclass

from crawler.core.urls import normalize_url


class BaseUrlError(ValueError):
    """SITEMAP_BASE_URL is not an http(s) URL."""


def prefix_of(url: str) -> str:
    """``http://h/docs/index.html`` -> ``http://h/docs/``."""
    return url[: url.rindex("/") + 1] if url.count("/") > 2 else url + "/"


@dataclass(frozen=True, slots=True)
class PublicUrls:
    start_prefix: str
    public_prefix: str
    rewrites: bool

    @classmethod
    def create(cls, start_url: str, base_url: str | None) -> PublicUrls:
        start_prefix = prefix_of(start_url)
        if not base_url:
            return cls(start_prefix, start_prefix, False)
        base = normalize_url(base_url, strip_params=False)
        if base is None or "?" in base:
            raise BaseUrlError(f"--base-url must be an http(s) URL without a query: {base_url!r}")
        if not base.endswith("/"):
            base += "/"
        return cls(start_prefix, base, True)

    def loc(self, url: str) -> str | None:
        """The published address of a crawled URL; None when it has none."""
        if url.startswith(self.start_prefix):
            return self.public_prefix + url[len(self.start_prefix) :]
        return None if self.rewrites else url

    def to_crawl(self, url: str) -> str:
        """A public address (a canonical, say) mapped back into crawl space."""
        if self.rewrites and url.startswith(self.public_prefix):
            return self.start_prefix + url[len(self.public_prefix) :]
        return url

    def sitemap_loc(self, name: str) -> str:
        """Where a published sitemap file will be served."""
        return self.public_prefix + name
