"""Publishing speed: N listed URLs from the ledger into a gzipped, rotated sitemap set.

    python bench/write.py [--urls N] [--links-per-page K] [--format xml|txt] [--no-gzip]
                          [--changefreq F] [--priority P] [--keep DIR] [--no-validate]
                          [--row-columns 3|6] [--own-values]

Builds a ledger of N listed pages (default 1,000,000) in a temporary directory with
direct SQL through :class:`crawler.ledger.ledger.Ledger`'s connection, as a crawl leaves it:
URLs of about 60 to 90 characters, some with a query that needs escaping (``&``),
some with %-escapes, a lastmod on most, every column of ``urls`` filled, and
about 15% rows that are not listed (redirects, 404s, noindex, caps). Building it is
not timed.

Then it times the step the publisher extension runs at the end of a crawl,
:meth:`crawler.publish.publisher.SitemapOutput.write`: the sorted
ledger read, one checked :class:`~crawler.sitemaps.entry.SitemapEntry` per URL, and
:class:`~crawler.publish.writer.SitemapSetWriter` writing, rotating and publishing the set
(temporary names, fsync, rename, index last). It prints URLs, files, seconds, URLs/s,
peak RSS of the process (``getrusage``, so it includes the untimed set-up) and the
gzip level.

``--row-columns 6`` reads the rows in their full shape instead, ``(loc, lastmod,
extras, section, changefreq, priority)`` (crawler.sitemaps.entryrows.ROW_COLUMNS), the three new
columns NULL as for a set without sections or rules, from the same covering index:
the shape the ledger gives once sections exist, which must keep the speed of plain
rows. ``--own-values`` gives about a third of the rows a changefreq and a priority of
their own (the per-row path).

Last, untimed: every child file and the index are validated against the official
XSDs in ``tests/xsd`` (as tests/xsd.py loads them), the URLs are read back and
compared, in order, with the ledger's listed locs, and their count with N.
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import resource
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from lxml import etree  # noqa: E402
from scrapy.settings import Settings  # noqa: E402

from crawler.core.decisions import LISTED  # noqa: E402
from crawler.ledger.ledger import Ledger  # noqa: E402
from crawler.ledger.records import COLUMNS  # noqa: E402
from crawler.publish.publisher import SitemapOutput  # noqa: E402
from crawler.publish.writer import CHILD_NAME_RE, SitemapSetWriter  # noqa: E402
from crawler.sitemaps.entryrows import EntryRows  # noqa: E402
from crawler.sitemaps.limits import SITEMAP_NS  # noqa: E402
from tests.xsd import XSD_DIR  # noqa: E402

SITE = "https://www.example-shop.com/"
SECTIONS = (
    "products",
    "blog",
    "docs/guides",
    "category",
    "news/2025",
    "help/articles",
    "store/en-gb",
    "collections",
)
WORDS = (
    "garden",
    "furniture",
    "outdoor",
    "table",
    "chair",
    "blue",
    "green",
    "steel",
    "oak",
    "cotton",
    "linen",
    "winter",
    "summer",
    "classic",
    "modern",
    "vintage",
    "compact",
    "large",
    "small",
    "kitchen",
    "lamp",
    "cushion",
    "rug",
    "mirror",
    "shelf",
    "storage",
    "basket",
    "candle",
    "vase",
    "frame",
    "clock",
    "desk",
    "bench",
    "sofa",
    "bed",
    "pillow",
    "towel",
)
NOT_LISTED = (
    ("redirect", 301, "moved"),
    ("status", 404, "HTTP 404"),
    ("noindex", 200, "meta robots noindex"),
    ("cap-reached", None, "max depth 50"),
)
# The writer's default, which the publisher extension uses.
GZIP_LEVEL = SitemapSetWriter.__init__.__kwdefaults__["compresslevel"]


def page_url(rng: random.Random, i: int) -> str:
    """A realistic page URL of about 60 to 90 characters; unique through ``i``."""
    words = rng.sample(WORDS, 3)
    path = f"{SITE}{rng.choice(SECTIONS)}/{words[0]}-{words[1]}/{words[2]}-{i:07d}"
    roll = rng.random()
    if roll < 0.08:
        # A query with "&", which the writer must escape.
        path += f"?colour={rng.choice(WORDS)}&size={rng.choice('smlx')}"
    elif roll < 0.11:
        path += f"/caf%C3%A9-cr%C3%A8me-{rng.randrange(100)}"
    elif roll < 0.13:
        path += f"?q={words[0]}%20{words[1]}&page={rng.randrange(2, 40)}"
    elif roll < 0.131:
        path += "/it's-here"
    else:
        path += ".html"
    return path


def lastmod(rng: random.Random) -> str | None:
    roll = rng.random()
    month, day = rng.randrange(1, 13), rng.randrange(1, 29)
    if roll < 0.70:
        hour, minute, second = rng.randrange(24), rng.randrange(60), rng.randrange(60)
        return f"2025-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}+00:00"
    if roll < 0.85:
        return f"2025-{month:02d}-{day:02d}"
    return None


def ledger_rows(
    urls: int, links_per_page: int, seed: int
) -> Iterator[tuple[tuple[Any, ...], list[str]]]:
    """Rows in ``COLUMNS`` order, each with its links: ``urls`` listed pages and ~15%
    others, in crawl order."""
    rng = random.Random(seed)
    now = time.time()
    listed = 0
    i = 0
    while listed < urls:
        i += 1
        url = page_url(rng, i)
        links = [page_url(rng, rng.randrange(1, 10 * urls)) for _ in range(links_per_page)]
        values: dict[str, Any] = {
            "key": url,
            "url": url,
            "depth": rng.randrange(1, 12),
            "referrer": page_url(rng, rng.randrange(1, 10 * urls)),
            "first_seen": now - 86400,
            "updated": now,
        }
        if rng.random() < 0.15:
            decision, status, reason = rng.choice(NOT_LISTED)
            values.update(decision=decision, status=status, reason=reason)
            if decision == "redirect":
                values["target"] = values["target_key"] = url + "/"
        else:
            listed += 1
            modified = lastmod(rng)
            values.update(
                decision="listed",
                status=200,
                content_type="text/html; charset=utf-8",
                last_modified="Mon, 02 Jun 2025 10:00:00 GMT",
                loc=url,
                lastmod=modified,
                lastmod_source=None if modified is None else "header",
                content_hash=f"{rng.getrandbits(256):064x}",
                main_hash=f"{rng.getrandbits(256):064x}",
                etag=f'"{rng.getrandbits(64):016x}"',
            )
        row = tuple(values.get(column, "" if column == "reason" else None) for column in COLUMNS)
        yield row, links if values["decision"] == "listed" else []


def build_ledger(path: Path, urls: int, links_per_page: int, seed: int) -> None:
    ledger = Ledger(path)
    insert = f"INSERT INTO urls ({', '.join(COLUMNS)}) VALUES ({', '.join('?' * len(COLUMNS))})"
    for row, links in ledger_rows(urls, links_per_page, seed):
        ledger._db.execute(insert, row)
        ledger.keep_links(row[0], links, [])
    ledger.close()


def output(args: argparse.Namespace) -> SitemapOutput:
    settings = Settings()
    settings.setmodule("settings", priority="project")
    overrides: dict[str, Any] = {
        "SITEMAP_FORMAT": args.format,
        "SITEMAP_GZIP": not args.no_gzip,
    }
    if args.changefreq:
        overrides["SITEMAP_CHANGEFREQ"] = args.changefreq
    if args.priority is not None:
        overrides["SITEMAP_PRIORITY"] = args.priority
    settings.setdict(overrides, priority="cmdline")
    return SitemapOutput.from_settings(settings)


# The full row (crawler.sitemaps.entryrows.ROW_COLUMNS), by the query listed_entries() makes.
_FULL_ROWS = (
    "SELECT loc, lastmod, extras, NULL, NULL, NULL FROM urls"
    f" WHERE decision = '{LISTED}' ORDER BY loc"
)
# The same, a third of the rows with their own changefreq and priority.
_OWN_VALUES_ROWS = (
    "SELECT loc, lastmod, extras, NULL,"
    " CASE length(loc) % 3 WHEN 0 THEN 'daily' END,"
    " CASE length(loc) % 3 WHEN 0 THEN '0.8' END"
    f" FROM urls WHERE decision = '{LISTED}' ORDER BY loc"
)


def full_rows(ledger: Ledger, own_values: bool) -> None:
    """Make ``ledger.listed_entries()`` give full rows (see the module's text)."""
    query = _OWN_VALUES_ROWS if own_values else _FULL_ROWS

    def listed_entries(changefreq: Any = None, priority: Any = None) -> EntryRows:
        return EntryRows(ledger._db.execute(query), changefreq, priority)

    ledger.listed_entries = listed_entries  # type: ignore[method-assign]


def read_back(out: Path, index_name: str, fmt: str) -> tuple[int, list[str]]:
    """Validate the index and every XML child against the XSDs; return (how many
    files were validated, the locs of all children in order)."""
    parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
    urlset = etree.XMLSchema(etree.parse(str(XSD_DIR / "sitemap-all.xsd")))
    siteindex = etree.XMLSchema(etree.parse(str(XSD_DIR / "siteindex.xsd")))
    ns = {"s": SITEMAP_NS}
    index = etree.fromstring((out / index_name).read_bytes(), parser)
    siteindex.assertValid(index)
    locs: list[str] = []
    children = index.xpath("s:sitemap/s:loc/text()", namespaces=ns)
    for loc in children:
        name = loc.rsplit("/", 1)[1]
        assert CHILD_NAME_RE.match(name), name
        data = (out / name).read_bytes()
        if name.endswith(".gz"):
            data = gzip.decompress(data)
        if fmt == "txt":
            locs.extend(data.decode("utf-8").splitlines())
            continue
        root = etree.fromstring(data, parser)
        urlset.assertValid(root)
        locs.extend(root.xpath("s:url/s:loc/text()", namespaces=ns))
    return 1 + (len(children) if fmt == "xml" else 0), locs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--urls", type=int, default=1_000_000, help="listed URLs (1,000,000)")
    ap.add_argument("--links-per-page", type=int, default=10, help="stored links a row (10)")
    ap.add_argument("--format", choices=("xml", "txt"), default="xml")
    ap.add_argument("--no-gzip", action="store_true")
    ap.add_argument("--changefreq", help="SITEMAP_CHANGEFREQ for every URL")
    ap.add_argument("--priority", help="SITEMAP_PRIORITY for every URL")
    ap.add_argument("--runs", type=int, default=3, help="timed publishing runs (3)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--keep", type=Path, help="work in DIR (kept; its ledger reused)")
    ap.add_argument("--no-validate", action="store_true", help="skip the XSD check")
    ap.add_argument(
        "--row-columns",
        type=int,
        choices=(3, 6),
        default=3,
        help="rows as listed_entries() gives them (3), or in full, NULL section, "
        "changefreq and priority (6)",
    )
    ap.add_argument(
        "--own-values",
        action="store_true",
        help="with --row-columns 6: a third of the rows with their own changefreq and priority",
    )
    args = ap.parse_args(argv)
    if args.own_values and args.row_columns != 6:
        ap.error("--own-values needs --row-columns 6")

    with tempfile.TemporaryDirectory(prefix="bench-write-") as temp:
        work = args.keep or Path(temp)
        work.mkdir(parents=True, exist_ok=True)
        out, state = work / "public", work / "public.sitemap-state"
        ledger_path = state / "ledger.running.sqlite"
        if ledger_path.exists():
            print(f"set-up: reusing {ledger_path}", file=sys.stderr)
        else:
            started = time.perf_counter()
            build_ledger(ledger_path, args.urls, args.links_per_page, args.seed)
            print(
                f"set-up: ledger of {args.urls:,} listed URLs, "
                f"{ledger_path.stat().st_size / 2**20:,.0f} MiB, "
                f"in {time.perf_counter() - started:.1f} s (not timed)",
                file=sys.stderr,
            )

        ext = output(args)
        level = GZIP_LEVEL if ext.gzip else "-"
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"cores: {os.cpu_count()}  load average before: {load}")
        shape = "listed_entries()" if args.row_columns == 3 else "full rows (ROW_COLUMNS)"
        print(f"rows: {shape}{', a third with own values' if args.own_values else ''}")
        print(
            f"{'run':>3} {'URLs':>10} {'files':>6} {'seconds':>8} {'cpu s':>6} "
            f"{'URLs/s':>10} {'RSS MB':>7} gzip"
        )
        for run in range(1, args.runs + 1):
            ledger = Ledger(ledger_path)
            if args.row_columns == 6:
                full_rows(ledger, args.own_values)
            try:
                started, cpu = time.perf_counter(), time.process_time()
                index, files = ext.write(ledger, out, SITE)
                seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
            finally:
                ledger.close()
            peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            written = sum(f.urls for f in files)
            print(
                f"{run:>3} {written:>10,} {len(files) + 1:>6} {seconds:>8.2f} {cpu:>6.2f} "
                f"{written / seconds:>10,.0f} {peak_mb:>7.0f} {level}"
            )
        print(f"files: {len(files)} children + {index.name}; format {ext.fmt}")
        if args.no_validate:
            return 0 if written == args.urls else 1

        started = time.perf_counter()
        try:
            checked, locs = read_back(out, index.name, ext.fmt)
        except etree.DocumentInvalid as exc:
            print(f"XSD: FAILED: {exc}")
            return 1
        ledger = Ledger(ledger_path)
        try:
            expected = [entry.loc for entry in ledger.listed_entries()]
        finally:
            ledger.close()
        seconds = time.perf_counter() - started
        print(f"XSD: ok ({checked} files), checked in {seconds:.1f} s (not timed above)")
        same = locs == expected
        print(
            f"read back: {len(locs):,} URLs, expected {args.urls:,}; "
            f"the ledger's locs in order: {'yes' if same else 'NO'}"
        )
        return 0 if same and len(locs) == args.urls else 1


if __name__ == "__main__":
    sys.exit(main())
