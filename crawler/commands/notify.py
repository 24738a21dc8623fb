"""After a publish, tell IndexNow what changed (``crawl --indexnow-key KEY``).

Runs once the set is published, outside Scrapy's reactor, with the URLs ``report.json``
lists as added, lastmod-moved and removed. Nothing is submitted unless the key file is
served with exactly the key. A failed notification is exit status 7; the publish stands.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from crawler.fetch.tls import TlsPolicy
from crawler.publish import indexnow
from crawler.publish.htmlpage import write_html

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

    from crawler.core.outcome import RunOutcome


def notify(settings: BaseSettings, run: RunOutcome) -> indexnow.Outcome | None:
    """Submit *run*'s changes; None when there is nothing to do (no key, nothing
    published, or a first run without ``--indexnow-all``)."""
    key = settings.get("SITEMAP_INDEXNOW_KEY")
    summary = run.summary
    if not key or summary is None or summary.published is None or summary.report_path is None:
        return None
    published, path = summary.published, summary.report_path
    if summary.first_run and not settings.getbool("SITEMAP_INDEXNOW_ALL"):
        return None
    report = json.loads(path.read_text(encoding="utf-8"))
    urls = list(report.get("added") or [])
    urls += [change["url"] for change in report.get("lastmod_changes") or []]
    urls += list(report.get("removed") or [])
    parts = urlsplit(published.index_url)  # the public address of the published index
    root = f"{parts.scheme}://{parts.netloc}/"
    location = indexnow.key_location(root, key, settings.get("SITEMAP_INDEXNOW_KEY_LOCATION"))
    context = TlsPolicy.from_settings(settings).ssl_context()
    agent = settings.get("USER_AGENT")
    problem = indexnow.check_key(location, key, user_agent=agent, context=context)
    if problem is not None:
        outcome = indexnow.Outcome(
            submitted=0, batches=[], ok=False, message=f"IndexNow: nothing submitted: {problem}"
        )
    else:
        outcome = indexnow.submit(
            urls,
            host=parts.netloc,
            key=key,
            key_location=location,
            endpoint=settings.get("SITEMAP_INDEXNOW_ENDPOINT"),
            user_agent=agent,
        )
    report["indexnow"] = outcome.to_json()
    write_html(path, json.dumps(report, ensure_ascii=False, indent=1) + "\n")  # atomically
    return outcome
