"""Scrapy settings of sitemap-crawler (``scrapy.cfg``: ``[settings] default = settings``).

Scrapy's own are set for a polite crawl of a real site; the project's own are prefixed
``SITEMAP_``, in alphabetical order, each documented here and in docs/reference.md
(tests/test_docs.py holds the two together). ``-s NAME=VALUE`` sets any of them.
"""

from scrapy.settings import default_settings as _scrapy_defaults

from crawler import __version__
from crawler.sitemaps import limits as _limits

BOT_NAME = "sitemap-crawler"
SPIDER_MODULES = ["crawler.crawl.spider", "crawler.audit.spider"]
NEWSPIDER_MODULE = "crawler.crawl"
# `scrapy audit`, `worker` and `explain` are crawler/commands/'s (`scrapy crawl`: Scrapy's).
COMMANDS_MODULE = "crawler.commands"

# -- Identity and politeness -------------------------------------------------------

USER_AGENT = f"sitemap-crawler/{__version__} (+https://github.com/sitemap-crawler/sitemap-crawler)"
# robots.txt groups are matched on this product token.
ROBOTSTXT_USER_AGENT = "sitemap-crawler"
ROBOTSTXT_OBEY = True
# RFC 9309 groups and lines (exact token; unknown lines end no group), Protego's matching.
ROBOTSTXT_PARSER = "crawler.fetch.robotsrules.RobotsTxtParser"
CONCURRENT_REQUESTS = 16
CONCURRENT_REQUESTS_PER_DOMAIN = 8
DOWNLOAD_DELAY = 0
AUTOTHROTTLE_ENABLED = True
# Nothing but the start URL is queued before its answer sets the delay from the site's
# latency: a long start delay only slows the first requests.
AUTOTHROTTLE_START_DELAY = 0.05
AUTOTHROTTLE_MAX_DELAY = 30.0
AUTOTHROTTLE_TARGET_CONCURRENCY = 4.0

# The spider's own seen-set (crawler/core/seen.py) gives each URL one request; Scrapy's
# filter would keep a second set (twice the memory at a million URLs) to find nothing.
DUPEFILTER_CLASS = "scrapy.dupefilters.BaseDupeFilter"

# Breadth-first (Scrapy's documented BFO settings): a page is first found by its
# shortest link path, so SITEMAP_MAX_DEPTH means distance from the start URL.
# Depth-first, Scrapy's default, lets long next/previous chains reach pages first at
# a depth past the limit.
DEPTH_PRIORITY = 1
SCHEDULER_DISK_QUEUE = "scrapy.squeues.PickleFifoDiskQueue"
SCHEDULER_MEMORY_QUEUE = "scrapy.squeues.FifoMemoryQueue"

# -- Safe defaults for a real site ----------------------------------------------------

DOWNLOAD_TIMEOUT = 30
DOWNLOAD_MAXSIZE = 16 * 1024 * 1024
DOWNLOAD_WARNSIZE = 4 * 1024 * 1024
# Each lookup of aiohttp's resolver (crawler.fetch.resolver), which also knows the
# test-only SITEMAP_TEST_HOSTS.
DNS_TIMEOUT = 20
RETRY_TIMES = 2
# Only robots.txt requests use Scrapy's redirects (5 hops, RFC 9309); pages hop by hop.
REDIRECT_MAX_TIMES = 5
METAREFRESH_ENABLED = False
# Scrapy's components that do nothing here, off (each costs every response or request):
SPIDER_MIDDLEWARES = {
    # Every status reaches the spider: a 404 is a decision, not an error.
    "scrapy.spidermiddlewares.httperror.HttpErrorMiddleware": None,
    # The spider refuses a long URL itself, with a recorded reason ("too-long").
    "scrapy.spidermiddlewares.urllength.UrlLengthMiddleware": None,
    # It warns of meta copied from a response into a request: the spider copies none.
    "scrapy.spidermiddlewares.metacopy.MetaCopyDetectionMiddleware": None,
}
# The downloader's byte and status counts (the summary counts from CoreStats).
DOWNLOADER_STATS = False
TELNETCONSOLE_ENABLED = False
# Scrapy reads the callback's source on every response (its cache misses on bound
# methods) to warn about a generator's return value: our callbacks are linted instead.
WARN_ON_GENERATOR_RETURN_VALUE = False
# Scrapy 2.19 opens a local HTTP control port by default; a crawler needs none.
REMOTE_CONTROL_ENABLED = False
LOG_LEVEL = "INFO"
# Scrapy's formatter, less the per-page "Crawled" and "Scraped" messages above DEBUG.
LOG_FORMATTER = "crawler.core.logformatter.QuietLogFormatter"

DOWNLOADER_MIDDLEWARES = {
    "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
    # Credentials are SiteAccessMiddleware's (SITEMAP_AUTH).
    "scrapy.downloadermiddlewares.httpauth.HttpAuthMiddleware": None,
    "crawler.fetch.hostguard.HostGuardMiddleware": 50,
    # HSTS: http:// of a host that asked for https only is taken as https://, with no
    # request over http (robots.txt's included: before it).
    "crawler.fetch.hsts.StrictTransportMiddleware": 60,
    # A staging site's credentials, for it alone: after the cookie middleware (700).
    "crawler.fetch.access.SiteAccessMiddleware": 740,
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "crawler.fetch.robots.StrictRobotsTxtMiddleware": 100,
    # A page the revisit schedule keeps tonight is answered here, after robots.txt.
    "crawler.fetch.kept.KeptPagesMiddleware": 120,
    "scrapy.downloadermiddlewares.cookies.CookiesMiddleware": None,
    "crawler.fetch.cookies.OfflineCookiesMiddleware": 700,
    # Just before HttpCompressionMiddleware (590) in process_response order.
    "crawler.fetch.compression.CompressedAsPlainResponseMiddleware": 595,
}
# Scrapy's own HTTP(S); a page to render (meta "playwright") goes to a headless Chromium
# through scrapy-playwright, started at the first such page (docs/rendering.md).
DOWNLOAD_HANDLERS = {
    "http": "crawler.fetch.renderhandler.RenderDownloadHandler",
    "https": "crawler.fetch.renderhandler.RenderDownloadHandler",
}
# Tasks per response's output: the pipelines are synchronous, so Scrapy's 100 cost time.
CONCURRENT_ITEMS = 4
# Scrapy's own extensions, less the two turned off above: Scrapy imports every one it
# lists, and the remote control's aiohttp slowed every start.
EXTENSIONS_BASE = dict(_scrapy_defaults.EXTENSIONS_BASE)
EXTENSIONS_BASE.pop("scrapy.extensions.remote_control.RemoteControl", None)  # Scrapy 2.19+
EXTENSIONS_BASE.pop("scrapy.extensions.telnet.TelnetConsole", None)
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
    "pipelines.schedule.SchedulePipeline": 255,
    "pipelines.rules.RulesPipeline": 260,
    "pipelines.ledger.LedgerPipeline": 300,
}

# -- sitemap-crawler ---------------------------------------------------------------------

# Hosts whose hreflang alternates are written unverified (others' are left out).
SITEMAP_ALTERNATE_HOSTS: list[str] = []
# Audit (sitemap-crawler audit): the ledger of the crawl to compare with, ...
SITEMAP_AUDIT_LEDGER = None
# ... the most bytes read from one sitemap file (a file over 50 MiB is reported) ...
SITEMAP_AUDIT_MAX_BYTES = 50 * 1024 * 1024 + 1
# ... how many index levels are followed ...
SITEMAP_AUDIT_MAX_DEPTH = 3
# ... sitemap URLs or local files to read besides robots.txt's and the usual places ...
SITEMAP_AUDIT_SITEMAPS: list[str] = []
# ... and where the audit keeps what the sitemaps say.
SITEMAP_AUDIT_STORE = None
# "USER:PASSWORD", HTTP basic auth sent to the crawled site only, never logged (--auth).
SITEMAP_AUTH = None
# Public address of the site: the prefix published <loc>s get (None: the crawled ones).
SITEMAP_BASE_URL = None
# A PEM file of CA certificates trusted besides the system's store (--ca-file).
SITEMAP_CA_FILE = None
# A link between two dated pages of one sequence (a calendar's prev/next) is followed
# only within this window of today, each way ("365d", "52w", "12m", "1y"; 0: off).
SITEMAP_CALENDAR_WINDOW = "365d"
# Publish even when the run looks broken (see SITEMAP_MAX_ERROR_RATE, SITEMAP_MAX_DROP).
SITEMAP_FORCE = False
# <changefreq> by rule, "REGEX=VALUE" (the first match wins) or "auto" (from history).
SITEMAP_CHANGEFREQ_RULES: list[str] = []
# Published <changefreq> for every URL (always ... never); None omits it.
SITEMAP_CHANGEFREQ = None
# Cookies for the crawled site, "NAME=VALUE" (--cookie): sent to that site only.
SITEMAP_COOKIES: list[str] = []
# changes.atom, the delta feed of the changed URLs, published beside the index ...
SITEMAP_FEED = True
# ... its window in days ...
SITEMAP_FEED_DAYS = 7
# ... and its most entries, newest first.
SITEMAP_FEED_MAX = 1000
# Pages with byte-identical bodies are listed once, under the shortest URL ("duplicate").
SITEMAP_DEDUPE_CONTENT = True
# Regular expressions (re.search on the normalised URL): a URL matching any
# SITEMAP_EXCLUDE is not crawled; with SITEMAP_INCLUDE set, only URLs matching one are.
SITEMAP_EXCLUDE: list[str] = []
# Output format of the sitemap files: "xml" or "txt" (the index is always XML).
SITEMAP_FORMAT = "xml"
# Gzip the sitemap files (reproducible bytes: fixed mtime, no file name).
SITEMAP_GZIP = True
SITEMAP_INCLUDE: list[str] = []
# Start from the previous run's ledger (conditional requests, lastmod, publish checks).
SITEMAP_INCREMENTAL = True
# Headers for the crawled site, "Name: value" (--header): sent to that site only.
SITEMAP_HEADERS: list[str] = []
# hreflang alternates (<xhtml:link>) of listed pages, verified as Google reads them.
SITEMAP_HREFLANG = True
# Hosts (CDNs) whose images are written; other hosts' images are left out.
SITEMAP_IMAGE_HOSTS: list[str] = []
# <image:image> entries of listed pages (--images): crawler/page/pagemedia.py.
SITEMAP_IMAGES = False
# IndexNow: after a publish, the URLs changed are submitted with this key (None: not) ...
SITEMAP_INDEXNOW_KEY = None
# ... also on a first run (which otherwise submits nothing) ...
SITEMAP_INDEXNOW_ALL = False
# ... to this endpoint ...
SITEMAP_INDEXNOW_ENDPOINT = "https://api.indexnow.org/indexnow"
# ... with the key file here (None: <site root>/<key>.txt).
SITEMAP_INDEXNOW_KEY_LOCATION = None
# Send SITEMAP_AUTH, _COOKIES and _HEADERS even when SITEMAP_TLS_VERIFY is off
# (--insecure-credentials): by default an unverified host gets none of them.
SITEMAP_INSECURE_CREDENTIALS = False
# Fall back to page metadata (article:modified_time, JSON-LD dateModified) for lastmod.
SITEMAP_LASTMOD_FROM_PAGE = True
# Content types listed besides HTML (e.g. ["application/pdf"]).
SITEMAP_LISTED_TYPES: list[str] = []
# Upper bound, in seconds, on a robots.txt Crawl-delay we honour.
SITEMAP_MAX_CRAWL_DELAY = 10.0
# Refuse to publish when the set would drop more than this share of the previous one ...
SITEMAP_MAX_DROP = 0.2
# ... or when more than this share of the fetched pages failed (5xx, timeouts).
SITEMAP_MAX_ERROR_RATE = 0.1
# Rotation caps of one sitemap file (the protocol's maxima).
SITEMAP_MAX_BYTES_PER_FILE = _limits.MAX_BYTES_PER_FILE
SITEMAP_MAX_URLS_PER_FILE = _limits.MAX_URLS_PER_FILE
# Link depth from the start URL past which URLs are not fetched (0: no limit).
SITEMAP_MAX_DEPTH = 50
# Pages fetched at most; later URLs are recorded as "cap-reached" (0: no limit).
SITEMAP_MAX_PAGES = 500_000
# Redirect hops followed from one URL before the target is left unfetched.
SITEMAP_MAX_REDIRECTS = 10
# Query variants of one path listed at most, shortest first (0: no cap; others "trap").
SITEMAP_MAX_VARIANTS_PER_PATH = 20
# The publication named by a news sitemap of the last 48 hours' articles (None: none).
SITEMAP_NEWS_PUBLICATION = None
# The reference time of the news window (a W3C datetime); None: when the run starts.
SITEMAP_NEWS_TIME = None
# Where the sitemap set is published.
SITEMAP_OUT_DIR = "public"
# Page parsing: pages waiting for the least busy worker before one is parsed here (0: never) ...
SITEMAP_PARSE_BACKLOG = 4
# ... bodies smaller than this are parsed there too (sending costs more than parsing) ...
SITEMAP_PARSE_LOCAL_BELOW = 4 * 1024
# ... and the processes that parse HTML pages (None: one per free core, at most 2; 0: none).
SITEMAP_PARSE_PROCESSES = None
# Continue the interrupted run kept in JOBDIR and its running ledger (--resume).
SITEMAP_RESUME = False
# The revisit schedule of nightly runs (docs/nightly.md): verify every known URL tonight
# (--full) ...
SITEMAP_REVISIT_FULL = False
# ... the longest interval between two verifications of a URL, in days (--revisit-max) ...
SITEMAP_REVISIT_MAX = 7.0
# ... and the shortest (--revisit-min): a URL is due on the run that starts within half of
# it of its due time.
SITEMAP_REVISIT_MIN = 1.0
# <priority> by rule, "REGEX=VALUE" (the first match wins).
SITEMAP_PRIORITY_RULES: list[str] = []
# Published <priority> for every URL (0.0-1.0); None omits it.
SITEMAP_PRIORITY = None
# Write and publish the sitemap set when the crawl finishes (off: ledger only).
SITEMAP_PUBLISH = True
# Distributed crawls (crawl --redis, worker): the crawl's id in Redis (set by the command) ...
SITEMAP_REDIS_CRAWL = None
# ... whether the coordinator fetches nothing itself (crawl --no-fetch) ...
SITEMAP_REDIS_NO_FETCH = False
# ... the process ids of the workers crawl --processes started (set by the command line):
# with --no-fetch, once they have all exited with work left, the crawl fails ...
SITEMAP_REDIS_LOCAL_WORKERS: list[int] = []
# ... the crawl's fetching processes that share this machine's cores (crawl --processes N
# sets N; "auto" render concurrency divides the cores among them) ...
SITEMAP_REDIS_PROCESSES_HERE = 1
# ... seconds an idle process waits before looking at the shared queue again ...
SITEMAP_REDIS_POLL_INTERVAL = 0.05
# ... page reports the coordinator reads from Redis at a time ...
SITEMAP_REDIS_REPORT_BATCH = 200
# ... this process's role, "coordinator" or "worker", set by the command line ...
SITEMAP_REDIS_ROLE = None
# ... the redis-server crawl --processes starts (None: PATH's, else the processes extra's) ...
SITEMAP_REDIS_SERVER = None
# ... the Redis database (redis://host:6379/0; None: one process, no Redis) ...
SITEMAP_REDIS_URL = None
# ... and the seconds without a heartbeat before a process's requests are queued again.
SITEMAP_REDIS_WORKER_TIMEOUT = 30.0
# Rendering JavaScript-built pages in a headless Chromium (docs/rendering.md): "never",
# "auto" (an application shell, or a URL SITEMAP_RENDER_INCLUDE matches) or "always" ...
SITEMAP_RENDER = "auto"
# ... the Chromium binary (None: chromium-headless-shell, chromium or chromium-browser
# on PATH) ...
SITEMAP_RENDER_BROWSER = None
# ... pages rendered at once ("auto": two per core, at most the concurrency and 8) ...
SITEMAP_RENDER_CONCURRENCY: int | str = "auto"
# ... pages a browser context renders before it is closed and a fresh one opened ...
SITEMAP_RENDER_CONTEXT_PAGES = 500
# ... or sooner, once its renderer processes use more than these megabytes each on
# average (Linux's /proc; a renderer grows with the pages it renders) ...
SITEMAP_RENDER_CONTEXT_MB = 40
# ... regexes (re.search on the normalised URL) of pages "auto" always renders ...
SITEMAP_RENDER_INCLUDE: list[str] = []
# ... a raw page with fewer same-host links than this and an empty mount is a shell ...
SITEMAP_RENDER_SHELL_LINKS = 5
# ... and the seconds a render may take; past it, the page is judged on its raw HTML.
SITEMAP_RENDER_TIMEOUT = 15.0
# Write report.html beside report.json (and the audit's index.html), for people ...
SITEMAP_REPORT_HTML = True
# ... listing at most this many URLs per group (the rest are in the JSON or the ledger).
SITEMAP_REPORT_HTML_URLS = 1000
# Seconds before robots.txt is fetched again (RFC 9309: at most 24 hours); 0: once a crawl.
SITEMAP_ROBOTS_MAX_AGE = 24 * 60 * 60
# robots.txt bytes read, up to the last whole line (RFC 9309 asks for at least 500 KiB).
SITEMAP_ROBOTS_MAX_BYTES = 500 * 1024
# Sections, "NAME=REGEX": the first match puts a listed page in NAME's own files.
SITEMAP_SECTIONS: list[str] = []
# Crawl the URLs of the site's own sitemaps too, judged like links ...
SITEMAP_SEED_SITEMAPS = False
# ... and these sitemap URLs too (--sitemap; read even without SITEMAP_SEED_SITEMAPS).
SITEMAP_SEED_SITEMAP_URLS: list[str] = []
# Fetch an address that cannot exist first: pages like its 200 answer are "soft-404".
SITEMAP_SOFT404_PROBE = True
# A thin 200 page whose title, heading or text says the thing is not there is "soft-404".
SITEMAP_SOFT404_CONTENT = True
# Start URLs besides the spider's url (the same site), each judged like a link.
SITEMAP_START_URLS: list[str] = []
# Where the ledger and run state live (None: beside the output, "<out>.sitemap-state").
SITEMAP_STATE_DIR = None
# Query parameters removed besides the default ones (utm_*, gclid, session ids, ...:
# crawler/core/urls.py); SITEMAP_STRIP_PARAMS = False keeps every parameter.
SITEMAP_STRIP_EXTRA: list[str] = []
SITEMAP_STRIP_PARAMS = True
# Seconds between progress lines on stderr when not a terminal (0: no progress).
SITEMAP_PROGRESS_INTERVAL = 60.0
# For tests only: host names resolved to these addresses ({"www.example.test":
# "127.0.0.1"}) by the crawl and the start URL's pre-flight, as curl's --resolve does.
SITEMAP_TEST_HOSTS: dict[str, str] = {}
# Verify TLS certificates against the system's store and the host name (False:
# --insecure; the summary and report say so).
SITEMAP_TLS_VERIFY = True
# Crawler traps: a path segment repeated more than this many times ...
SITEMAP_TRAP_MAX_REPEATS = 2
# ... more query strings than this fetched for one path (to learn which parameters matter) ...
SITEMAP_TRAP_MAX_QUERY_VARIANTS = 40
# ... or more path segments than this.
SITEMAP_TRAP_MAX_SEGMENTS = 20
# A file of seed URLs, one a line (# comments; /path lines are on the start URL's site).
SITEMAP_URL_FILE = None
# <video:video> entries of listed pages (--videos): crawler/page/pagevideos.py.
SITEMAP_VIDEOS = False
# CSS selectors of regions (timestamps, counters) left out of the hash behind lastmod.
SITEMAP_VOLATILE_SELECTORS: list[str] = []
