"""Scrapy's cookie middleware, with the public-suffix list kept offline.

Scrapy's ``CookiesMiddleware`` asks ``tldextract`` whether a cookie's domain is a public
suffix. A default ``TLDExtract`` downloads the public-suffix list from the internet the
first time a site sets a cookie with a domain, which breaks the rule that the crawl
talks to the crawled host and nothing else (docs/crawling.md, "Same site only"). This
subclass uses the snapshot bundled with tldextract
(:func:`crawler.fetch.origin.public_suffix_list`).
"""

from __future__ import annotations

from collections.abc import Iterable
from http.cookiejar import Cookie

from scrapy.downloadermiddlewares.cookies import CookiesMiddleware
from scrapy.http import Request
from scrapy.http.cookies import CookieJar
from scrapy.utils.httpobj import urlparse_cached

from crawler.fetch.origin import public_suffix_list


def is_public_suffix(domain: str) -> bool:
    return not public_suffix_list()(domain).domain


class OfflineCookiesMiddleware(CookiesMiddleware):
    def _process_cookies(
        self, cookies: Iterable[Cookie], *, jar: CookieJar, request: Request
    ) -> None:
        # Same logic as Scrapy's, with the offline suffix check.
        hostname = urlparse_cached(request).hostname
        if hostname is None:
            return
        request_domain = hostname.lower()
        for cookie in cookies:
            cookie_domain = cookie.domain.removeprefix(".")
            if cookie_domain and is_public_suffix(cookie_domain):
                if cookie_domain != request_domain:
                    continue
                cookie.domain = request_domain
            jar.set_cookie_if_ok(cookie, request)
