"""The judge's verdict book and ``explain`` agree, rule by rule (crawler/crawl/verdicts.py,
docs/explain.md): a real crawl of a site with one URL per verdict, and ``explain``
replaying the same book on what the ledger kept of each page gets the crawl's decision,
reason and target from the same rule.

The site is ``x.t`` on a loopback address at ports 80 and 443 (tests/test_https.py's
servers), so that its http:// and https:// pages are one site; it is crawled from
``http://x.t/d/`` and published for ``--base-url http://p.t/``, whose 11 characters are
no valid ``<loc>``: the start URL's verdict is ``invalid-url``. ``www.x.t``, another form
of its host, answers on another address without redirecting.
"""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
import trustme

from crawler.crawl.verdicts import VerdictBook
from tests import test_https
from tests.test_explain_rules import ask
from tests.test_https import Domain

domain, ca = test_https.domain, test_https.ca  # the fixtures, used here

START = "http://x.t/d/"
#: Each URL of the site, and the rule of the verdict book that decides it (None: listed).
EACH: dict[str, tuple[str | None, str]] = {
    START: ("loc", "invalid-url"),
    "http://www.x.t/d/www": ("host-form", "excluded"),
    "http://x.t/d/removed": ("status", "status"),
    "http://x.t/d/file.zip": ("type", "non-html"),
    "http://x.t/d/listed": (None, "listed"),
    "http://x.t/d/noindex": ("noindex", "noindex"),
    "http://x.t/d/canonical": ("canonical", "canonical"),
    "https://x.t/d/tls": ("scheme", "other-scheme"),
    "http://x.t/outside": ("base-url", "excluded"),
    "http://x.t/d/gone": ("soft-404", "soft-404"),  # the site's "not found" page
    "http://x.t/d/says": ("soft-404", "soft-404"),  # a thin page that says so
}


def serve(domain: Domain) -> dict[str, str]:
    plain = domain.serve("plain", "x.t", 1, tls=False)
    plain.page("/d/", *(url for url in EACH if url != START))
    plain.page("/d/listed", "/d/")
    plain.page("/d/noindex", head='<meta name="robots" content="noindex">')
    plain.page("/d/canonical", head='<link rel="canonical" href="http://x.t/d/listed">')
    plain.page("/outside", "/d/")
    plain.raw("/d/removed", "<html><body>Removed.</body></html>", status=410)
    plain.raw("/d/file.zip", "PK", type="application/zip")
    plain.raw(
        "/d/says",
        "<html><head><title>Page not found</title></head><body><h1>Page not found</h1>"
        "<p>Sorry.</p></body></html>",
    )
    words = " ".join(f"shelf{n} aisle{n} row{n}" for n in range(40))
    plain.spec["missing"] = {"body": f"<html><body><h2>Lost</h2><p>{words}</p></body></html>"}
    plain.save()
    secure = domain.serve("secure", "x.t", 1)
    secure.page("/d/tls")
    secure.save()
    www = domain.serve("www", "www.x.t", 2, tls=False)
    www.page("/d/www", "/d/listed")
    www.save()
    return {"x.t": domain.address(1), "www.x.t": domain.address(2)}


def test_the_crawl_and_explain_agree_verdict_by_verdict(
    capsys: pytest.CaptureFixture[str],
    domain: Domain,
    ca: tuple[trustme.CA, Path],
    tmp_path: Path,
) -> None:
    hosts = serve(domain)
    # The feed's home page is then http://p.t/, shorter than a <loc>: Atom allows it.
    options = ("--ca-file", str(ca[1]), "--base-url", "http://p.t/")
    done = test_https.crawl(START, tmp_path, hosts, *options)
    assert done.returncode == 0, done.stderr[-3000:]
    assert b"<uri>http://p.t/</uri>" in (tmp_path / "public" / "changes.atom").read_bytes()
    state = tmp_path / "public.sitemap-state"
    with closing(sqlite3.connect(state / "ledger.sqlite")) as db:
        db.row_factory = sqlite3.Row
        rows = {r["url"]: dict(r) for r in db.execute("SELECT * FROM urls")}
    decided = {url: rows[url]["decision"] for url in EACH}
    assert decided == {url: decision for url, (_, decision) in EACH.items()}
    for url, (rule, decision) in EACH.items():
        row, found = rows[url], ask(capsys, state, url)
        listing = found["listing"]
        assert found["decision"] == decision and listing["would_decide"] == decision, url
        against = [check for check in listing["checks"] if check["ok"] is not True]
        if rule is None:
            assert against == [] and listing["would_list"] is True, listing
            continue
        # Every rule before the deciding one let the page pass, as in the crawl.
        assert [check["rule"] for check in against] == [rule], listing
        assert listing["checks"][-1] == {
            "rule": rule,
            "ok": False,
            "detail": row["reason"],
            "decision": row["decision"],
            **({"target": row["target"]} if row["target"] else {}),
        }, url
    assert rows["http://x.t/d/canonical"]["target"] == "http://p.t/listed"
    book = VerdictBook(START, public=None)  # type: ignore[arg-type]  # names only
    assert {rule for rule, _ in EACH.values()} - {None} == {r.name for r in book.rules}
    # A URL the crawl never saw: the verdicts that need no page answer, the others "?".
    unseen = ask(capsys, state, "https://x.t/d/never")["listing"]
    assert [c["ok"] for c in unseen["checks"]] == [None] * 5 + [False]
    assert unseen["would_decide"] == "other-scheme"
    unseen = ask(capsys, state, "http://x.t/d/never")["listing"]
    assert [c["ok"] for c in unseen["checks"]] == [None] * 5 + [True, True, None, True]
    assert unseen["would_list"] is None
