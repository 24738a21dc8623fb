"""What the rich entries of a set hold, settled once the crawl is over (docs/rich.md).

Whether an alternate a page declares holds up depends on the other pages (are they
listed? do they link back?), so :func:`settle` runs the hreflang cluster check
(:func:`crawler.page.hreflang.verify`) over the whole ledger and stores each rich page's
extensions as the writer reads them (``extras``) and its problems in words
(``problems``). Plain pages have no ``extras``: a plain site's files do not change.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from crawler.core import decisions as d
from crawler.core.lastmod import lastmod_datetime
from crawler.core.summary import RichCounts
from crawler.core.urls import site_of, url_key
from crawler.page.hreflang import verify
from crawler.sitemaps.entry import Alternate, News, SitemapEntry, Video
from crawler.sitemaps.extras import extras_json

if TYPE_CHECKING:
    from crawler.core.publicurl import PublicUrls
    from crawler.ledger.ledger import Ledger

#: How far back a news sitemap reaches: "articles published in the last two days".
NEWS_WINDOW = timedelta(hours=48)


@dataclass(frozen=True)
class _Row:
    key: str
    url: str
    loc: str
    alternates: list[tuple[str, str]]
    images: list[str]
    videos: list[dict[str, Any]]
    problems: list[str] = field(default_factory=list)


# Why an alternate is not listed, by its decision.
_NOT_LISTED = {
    d.NOINDEX: "noindex",
    d.REDIRECT: "a redirect to {target}",
    d.CANONICAL: "canonicalised to {target}",
    d.DUPLICATE: "a duplicate of {target}",
}


def _not_listed(ledger: Ledger) -> Any:
    """For a crawl URL: None when it is listed, else why not, in words."""

    def why(url: str) -> str | None:
        row = ledger.decision_of(url_key(url))
        if row is None:
            return "not crawled"
        decision, reason, target = row
        if decision == d.LISTED:
            return None
        if decision == d.STATUS:
            return reason  # "HTTP 404"
        return _NOT_LISTED.get(decision, f"not listed ({decision})").format(target=target)

    return why


def settle(ledger: Ledger, public: PublicUrls, alternate_hosts: frozenset[str]) -> RichCounts:
    """Settle every rich page's extensions and problems in *ledger* (see the module
    docstring); return what the set holds."""
    rows = list(_rich_rows(ledger, public))
    pages = {row.url: row.alternates for row in rows if row.alternates}
    verdict = verify(pages, _not_listed(ledger), alternate_hosts)
    counts = RichCounts()
    for row in rows:
        problems = list(row.problems)
        problems.extend(f"hreflang: {text}" for text in verdict.problems.get(row.url, ()))
        alternates = []
        for code, href in verdict.written.get(row.url, ()):
            loc = public.loc(href) if site_of(href) == site_of(row.url) else href
            alternates.append(Alternate(code, loc or href))
        videos = []
        for data in row.videos:
            try:
                videos.append(_video(data, public))
            except ValueError as e:
                name = data.get("content_loc") or data.get("player_loc") or "?"
                problems.append(f"video {name} not written: {e}")
        images = [public.loc(image) or image for image in row.images]
        entry = SitemapEntry(
            row.loc, None, alternates=tuple(alternates), images=tuple(images), videos=tuple(videos)
        )
        ledger.set_rich(row.key, extras_json(entry), problems)
        counts.alternates += len(alternates)
        counts.images += len(images)
        counts.videos += len(videos)
        counts.problems += len(problems)
    ledger.commit()
    return counts


def _rich_rows(ledger: Ledger, public: PublicUrls) -> Iterator[_Row]:
    for key, url, loc, alternates, images, videos, problems in ledger.rich_rows():
        declared = [
            (str(code), public.to_crawl(str(href))) for code, href in json.loads(alternates or "[]")
        ]
        lists = (json.loads(text or "[]") for text in (images, videos, problems))
        yield _Row(key, url, loc, declared, *lists)


# A video's fields the ledger keeps as they are written.
_VIDEO_AS_KEPT = ("duration", "publication_date", "expiration_date", "family_friendly", "live")


def _video(data: dict[str, Any], public: PublicUrls) -> Video:
    def address(name: str) -> str | None:
        value = data.get(name)
        return None if value is None else public.loc(value) or value

    return Video(
        thumbnail_loc=address("thumbnail_loc") or "",
        title=data.get("title") or "",
        description=data.get("description") or "",
        content_loc=address("content_loc"),
        player_loc=address("player_loc"),
        **{name: data.get(name) for name in _VIDEO_AS_KEPT},
    )


def news_entries(
    ledger: Ledger, publication: str, now: datetime
) -> tuple[list[SitemapEntry], list[tuple[str, str]]]:
    """The news sitemap's entries (listed articles published within
    :data:`NEWS_WINDOW` before *now*, newest first) and the articles of the window
    that cannot be written, with why: ``(loc, reason)``."""
    entries: list[tuple[datetime, SitemapEntry]] = []
    problems: list[tuple[str, str]] = []
    for loc, news in ledger.news_rows():
        data = json.loads(news)
        published = lastmod_datetime(data["publication_date"])
        if not now - NEWS_WINDOW <= published <= now:
            continue
        try:
            entry = SitemapEntry(
                loc,
                None,
                news=News(publication, data.get("language") or "", data["publication_date"],
                          data.get("title") or ""),
            )  # fmt: skip
        except ValueError as e:
            problems.append((loc, f"news: not written: {e}"))
            continue
        entries.append((published, entry))
    entries.sort(key=lambda pair: (-pair[0].timestamp(), pair[1].loc))
    return [entry for _, entry in entries], problems
