"""Every option of every command, declared once: its flag, the setting it sets when
given (whose default is the option's), how its text is read and checked, its help and
where ``--help`` lists it. The parsers (and so ``--config`` and the API's keyword
arguments), ``--help`` and the mapping onto settings are built from these;
tests/test_docs.py holds docs/reference.md against them.

A help text names a setting's default as ``{SETTING_NAME}``, read when the parser is
built: a default is written once, in settings/__init__.py.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import settings as project
from crawler.commands.settingrules import FORMATS, LOG_LEVELS, RULES, option_type
from crawler.commands.values import (
    classes,
    duration,
    percent,
    processes_count,
    robots_token,
    setting,
)
from crawler.core.agent import product_token
from crawler.fetch.rendering import MODES as RENDER_MODES
from crawler.sitemaps.limits import MAX_BYTES_PER_FILE, MAX_URLS_PER_FILE

#: A group of ``--help``: its title and what its options have in common.
Group = tuple[str, str]


@dataclass(frozen=True)
class Option:
    """One option of a command (a flag ``--name``, or a positional ``name``). Given (not
    None, off or empty), it sets *setting* to its value, or to what *value* makes of it,
    and the settings *also* makes of it; left out, it sets none, and the setting's
    default (``{SETTING}`` in its help) is the option's. *action*: ``store``,
    ``store_true`` or ``append``; *from_setting*: the parser's default is the setting's.
    *type* reads the text; an option that sets a setting with a rule is checked by it."""

    flag: str
    setting: str = ""
    type: Callable[[str], Any] | None = None
    metavar: str | None = None
    action: str = "store"
    help: str = ""
    choices: tuple[str, ...] | None = None
    default: Any = None
    from_setting: bool = False
    value: Callable[[Any], Any] | None = None
    also: Callable[[Any], dict[str, Any]] | None = None
    group: Group | None = None
    alias: str = ""
    dest: str | None = None
    nargs: str | None = None
    required: bool = False

    def says(self, help: str) -> Option:
        """This option, with *help* as its text in ``--help``."""
        return replace(self, help=help)

    @property
    def name(self) -> str:
        """The attribute of the parsed arguments that holds it."""
        return self.dest or self.flag.lstrip("-").replace("-", "_")

    def settings(self, given: Any) -> dict[str, Any]:
        """The settings it sets when *given* (its parsed value)."""
        if not self.setting or given is None or given is False or given == []:
            return {}
        value = self.value(given) if self.value else given
        return {self.setting: value, **(self.also(given) if self.also else {})}


def add_options(
    parser: argparse.ArgumentParser, options: Iterable[Option], *, scrapy: bool = False
) -> None:
    """Add *options* to *parser*, in that order, each in its group (*scrapy*: not
    those Scrapy's command line has of its own)."""
    groups: dict[Group | None, argparse._ActionsContainer] = {None: parser}
    for option in options:
        if scrapy and option.flag in ("--log-level", "--set"):
            continue
        if option.group is not None and option.group not in groups:
            groups[option.group] = parser.add_argument_group(*option.group)
        kw: dict[str, Any] = {"help": option.help.format_map(vars(project))}
        if option.flag.startswith("-"):
            kw.update(dest=option.name, required=option.required)
        if option.action == "store_true":
            kw["action"] = "store_true"
        else:
            default = getattr(project, option.setting) if option.from_setting else option.default
            many = option.action == "append" or option.nargs == "*"
            read = option.type
            if option.setting in RULES:
                read = option_type(option.setting, read, option.action == "append")
            kw.update(action=option.action, default=[] if many else default, type=read)
            kw.update(metavar=option.metavar, choices=option.choices, nargs=option.nargs)
        groups[option.group].add_argument(*filter(None, (option.alias, option.flag)), **kw)


def given_settings(args: argparse.Namespace, options: Iterable[Option]) -> dict[str, Any]:
    """The settings the options given in *args* set, in *options*' order."""
    return {k: v for o in options for k, v in o.settings(getattr(args, o.name, None)).items()}


def _absolute(path: str) -> str:
    return str(Path(path).absolute())


def _switch(flag: str, setting: str, group: Group | None = None) -> Option:
    """An option without a value that turns *setting* on (``--no-...``: off)."""
    on = not flag.startswith("--no-")
    return Option(flag, setting, action="store_true", value=lambda _: on, group=group)


def _lower(hosts: list[str]) -> list[str]:
    return [host.lower() for host in hosts]


def _hosts(flag: str, setting: str, group: Group) -> Option:
    return Option(flag, setting, metavar="HOST", action="append", value=_lower, group=group)


def _limit(flag: str, setting: str, what: str) -> Option:
    return Option(flag, setting, int, "N").says(f"{what} (default {{{setting}}}; 0 means no limit)")


# A table: each option's declaration and help together, its help closing its line.
# fmt: off
ACCESS: Group = (
    "staging and private sites",
    "sent to the crawled site only (never to another host, even on a redirect) and never logged, "
    "recorded or reported",
)
TLS: Group = ("HTTPS",
              "certificates are verified against the system's trust store and the host name")

URL = Option("url", nargs="?").says("start URL, e.g. https://www.example.com/ (or in --config)")
LOG_LEVEL = Option("--log-level", "LOG_LEVEL", choices=LOG_LEVELS, default="CRITICAL").says(
    "Scrapy's log on stderr (default: %(default)s, i.e. only this command's summary, progress and "
    "a one-line error; every decision is in the ledger either way)")
SET = Option("--set", type=setting, metavar="NAME=VALUE", action="append", alias="-s",
             dest="settings").says("set any Scrapy or SITEMAP_* setting (repeatable)")
CONCURRENCY = Option("--concurrency", "CONCURRENT_REQUESTS_PER_DOMAIN", int, "N",
                     also=lambda n: {"CONCURRENT_REQUESTS": n}).says(
    "concurrent requests (default {CONCURRENT_REQUESTS_PER_DOMAIN} per host, "
    "{CONCURRENT_REQUESTS} in all)")

#: The options of every command that crawls (``crawl``, ``audit``), in ``--help``'s order.
SITE = (
    URL,
    Option("--config", metavar="FILE").says(
        "a TOML file holding any of these options (names as here, without the dashes or with _ "
        'for -, e.g. url = "https://...", max-pages = 1000, include = ["..."], [settings] NAME = '
        "value); the command line wins"),
    Option("--base-url", "SITEMAP_BASE_URL", metavar="URL").says(
        "public address of the crawled site: every published <loc> is rewritten from the start "
        "URL's directory to this prefix"),
    _limit("--max-pages", "SITEMAP_MAX_PAGES", "fetch at most N pages"),
    _limit("--max-depth", "SITEMAP_MAX_DEPTH", "follow links at most N levels from the start URL"),
    _limit("--max-variants-per-path", "SITEMAP_MAX_VARIANTS_PER_PATH",
           "list at most N query variants of one path"),
    Option("--calendar-window", "SITEMAP_CALENDAR_WINDOW", None, "DURATION").says(
        "follow a calendar's or date archive's prev/next links only within this window of today, "
        "each way (default {SITEMAP_CALENDAR_WINDOW}; also 52w, 12m, 1y; 0 turns it off)"),
    CONCURRENCY,
    Option("--delay", "DOWNLOAD_DELAY", float, "S").says(
        "minimum delay between requests in seconds (default {DOWNLOAD_DELAY}, with AutoThrottle "
        "adapting to the server; robots.txt Crawl-delay wins when larger)"),
    Option("--user-agent", "USER_AGENT", metavar="UA",
           also=lambda agent: {"ROBOTSTXT_USER_AGENT": product_token(agent)}).says(
        "User-Agent header; its product token (AcmeBot in 'AcmeBot/1.0 (...)' or in 'Mozilla/5.0 "
        "(compatible; AcmeBot/1.0)') is matched against robots.txt groups"),
    Option("--robots-agent", "ROBOTSTXT_USER_AGENT", robots_token, "TOKEN").says(
        "the product token matched against robots.txt groups, instead of the User-Agent's"),
    Option("--include", "SITEMAP_INCLUDE", None, "REGEX", "append").says(
        "crawl only URLs matching REGEX (repeatable; any one matches)"),
    Option("--exclude", "SITEMAP_EXCLUDE", None, "REGEX", "append").says(
        "do not crawl URLs matching REGEX (repeatable)"),
    Option("--header", "SITEMAP_HEADERS", None, "'NAME: VALUE'", "append", group=ACCESS)
    .says("send this header with every request to the site (repeatable)"),
    Option("--auth", "SITEMAP_AUTH", None, "USER:PASSWORD", group=ACCESS).says(
        "HTTP basic auth for the site; better from the SITEMAP_AUTH environment variable or auth "
        "= ... in --config, out of the shell's history"),
    Option("--cookie", "SITEMAP_COOKIES", None, "NAME=VALUE", "append", group=ACCESS).says(
        "send this cookie to the site (repeatable; with the site's own cookies)"),
    replace(_switch("--insecure", "SITEMAP_TLS_VERIFY", TLS), value=lambda _: False).says(
        "do not verify TLS certificates (a self-signed staging host, say); the summary and the "
        "report say so, and --auth, --cookie and --header are not sent"),
    _switch("--insecure-credentials", "SITEMAP_INSECURE_CREDENTIALS", TLS).says(
        "with --insecure, send --auth, --cookie and --header all the same"),
    Option("--ca-file", "SITEMAP_CA_FILE", metavar="PEM", value=_absolute, group=TLS).says(
        "trust the CA certificates of this PEM file besides the system's"),
    LOG_LEVEL,
    SET,
)

SEEDS: Group = (
    "seeds beyond links",
    "more places the crawl starts from; every seed is judged like a link (scope, robots.txt, "
    "status, noindex, canonical) and listed only when it holds up",
)
RICH: Group = (
    "rich sitemaps",
    "what each listed page declares, written into its entry (hreflang on by default)",
)
RENDER: Group = (
    "JavaScript-built pages",
    "render pages in a headless Chromium (the render extra and the system's chromium; "
    "docs/rendering.md)",
)
AROUND: Group = (
    "around the sitemap",
    "a delta feed of changes, sections, changefreq and priority by rule, IndexNow",
)
NIGHTLY: Group = ("nightly runs", "the revisit schedule: what a run verifies (docs/nightly.md)")

#: ``crawl``'s options: those of every command that crawls, one or more start URLs, and its own.
CRAWL = (
    replace(URL, nargs="*").says(
        "start URL(s) of one site, e.g. https://www.example.com/ (or in --config)"),
    *SITE[1:],
    Option("--urls", "SITEMAP_URL_FILE", metavar="FILE", value=_absolute, group=SEEDS).says(
        "crawl the URLs of FILE too: one a line, # comments, /path for a path of the site; a URL "
        "of another site is recorded off-host, a line that is no URL is an error"),
    _switch("--seed-sitemaps", "SITEMAP_SEED_SITEMAPS", SEEDS).says(
        "crawl the URLs of the site's own sitemaps too (robots.txt Sitemap: lines, /sitemap.xml, "
        "/sitemap_index.xml, ...): orphan pages no link reaches get listed"),
    Option("--sitemap", "SITEMAP_SEED_SITEMAP_URLS", None, "URL", "append", group=SEEDS).says(
        "crawl the URLs of this sitemap (or index) of the site too (repeatable)"),
    Option("--max-time", "CLOSESPIDER_TIMEOUT", duration, "DURATION").says(
        "stop discovering after DURATION (90s, 30m, 2h), let the requests in flight finish and "
        "publish what was judged (the usual refusals apply); the URLs left unfetched are "
        "cap-reached (CLOSESPIDER_TIMEOUT)"),
    Option("--out", "SITEMAP_OUT_DIR", metavar="DIR", from_setting=True).says(
        "directory the sitemap set is published to (default: %(default)s)"),
    Option("--state", "SITEMAP_STATE_DIR", metavar="DIR").says(
        "directory for the crawl's ledger and state (default: beside --out, as OUT.sitemap-state; "
        "never inside --out)"),
    Option("--max-urls-per-file", "SITEMAP_MAX_URLS_PER_FILE", int, "N",
           from_setting=True).says(
        f"rotate sitemap files at N URLs, at most {MAX_URLS_PER_FILE} (default: %(default)s)"),
    Option("--max-bytes-per-file", "SITEMAP_MAX_BYTES_PER_FILE", int, "N",
           from_setting=True).says(
        f"rotate sitemap files at N bytes uncompressed, at most {MAX_BYTES_PER_FILE} (50 MiB; "
        "default: %(default)s)"),
    _switch("--no-gzip", "SITEMAP_GZIP").says(
        "write plain .xml/.txt files instead of gzipped ones"),
    Option("--format", "SITEMAP_FORMAT", choices=FORMATS, from_setting=True).says(
        "sitemap file format (default: %(default)s; the index is XML)"),
    _switch("--no-hreflang", "SITEMAP_HREFLANG", RICH).says(
        "write no hreflang alternates (xhtml:link); by default every listed page's alternates are "
        "written, those that hold up as Google reads them"),
    _hosts("--alternate-host", "SITEMAP_ALTERNATE_HOSTS", RICH).says(
        "write the hreflang alternates on HOST as the pages declare them (a same-host crawl "
        "cannot verify them; repeatable)"),
    _switch("--images", "SITEMAP_IMAGES", RICH).says(
        "write each listed page's images (image:image): img, srcset, picture, lazy-loading "
        "attributes, og:image; none fetched"),
    _hosts("--image-host", "SITEMAP_IMAGE_HOSTS", RICH).says(
        "write the images on HOST too, such as a CDN (repeatable; other hosts' are left out)"),
    _switch("--videos", "SITEMAP_VIDEOS", RICH).says(
        "write each listed page's videos (video:video) from schema.org VideoObject, og:video and "
        "<video poster>"),
    Option("--news-publication", "SITEMAP_NEWS_PUBLICATION", metavar="NAME", group=RICH).says(
        "write a news sitemap of the articles published within 48 hours, for the publication NAME "
        "(news:news)"),
    Option("--render", "SITEMAP_RENDER", choices=RENDER_MODES, group=RENDER).says(
        "never: read raw HTML only; auto: render a page whose raw HTML looks like an application "
        "shell (few links to the site and an empty mount element or a <noscript> asking for "
        "JavaScript) or whose URL matches --render-include; always: render every HTML page that "
        "is not noindex in its raw HTML (default: {SITEMAP_RENDER})"),
    Option("--render-include", "SITEMAP_RENDER_INCLUDE", None, "REGEX", "append", group=RENDER)
    .says(
        "with --render auto, always render pages whose URL matches (repeatable; re.search on the "
        "normalised URL)"),
    Option("--browser", "SITEMAP_RENDER_BROWSER", metavar="PATH", group=RENDER).says(
        "the Chromium binary to render with (default: the first on PATH of "
        "chromium-headless-shell, chromium, chromium-browser)"),
    Option("--render-concurrency", "SITEMAP_RENDER_CONCURRENCY", int, "N|auto",
           group=RENDER).says(
        "render at most N pages at once, or auto: two per core the crawl may use, at most "
        "--concurrency and 8 (default {SITEMAP_RENDER_CONCURRENCY})"),
    _switch("--no-feed", "SITEMAP_FEED", AROUND).says(
        "publish no changes.atom (the delta feed of the URLs that changed lately)"),
    Option("--feed-days", "SITEMAP_FEED_DAYS", int, "N", group=AROUND).says(
        "the feed holds the changes of the last N days (default {SITEMAP_FEED_DAYS})"),
    Option("--feed-max", "SITEMAP_FEED_MAX", int, "N", group=AROUND).says(
        "the feed holds at most N entries, newest first (default {SITEMAP_FEED_MAX})"),
    Option("--section", "SITEMAP_SECTIONS", None, "NAME=REGEX", "append", group=AROUND).says(
        "pages whose address matches REGEX go to section NAME, with files of their own "
        "(repeatable; the first match wins; NAME: a-z, 0-9, -)"),
    Option("--changefreq", "SITEMAP_CHANGEFREQ_RULES", None, "REGEX=VALUE|auto", "append",
           group=AROUND).says(
        "<changefreq> VALUE for pages whose address matches REGEX (repeatable; the first match "
        "wins), or auto: from each page's change history"),
    Option("--priority", "SITEMAP_PRIORITY_RULES", None, "REGEX=VALUE", "append",
           group=AROUND).says(
        "<priority> VALUE (0.0 to 1.0) for pages whose address matches REGEX (repeatable; the "
        "first match wins)"),
    Option("--indexnow-key", "SITEMAP_INDEXNOW_KEY", metavar="KEY", group=AROUND).says(
        "after a publish, submit the URLs added, changed and removed since the last published run "
        "to IndexNow with KEY (its key file must be served)"),
    Option("--indexnow-key-location", "SITEMAP_INDEXNOW_KEY_LOCATION", metavar="URL", group=AROUND)
    .says("where the key file is served (default: <site root>/KEY.txt)"),
    Option("--indexnow-endpoint", "SITEMAP_INDEXNOW_ENDPOINT", metavar="URL", group=AROUND).says(
        "the IndexNow endpoint (default: the shared {SITEMAP_INDEXNOW_ENDPOINT})"),
    _switch("--indexnow-all", "SITEMAP_INDEXNOW_ALL", AROUND).says(
        "on a first run, submit every listed URL (a first run submits nothing)"),
    _switch("--force", "SITEMAP_FORCE").says(
        "publish even when the run looks broken (more than {SITEMAP_MAX_ERROR_RATE:.0%}% of pages "
        "failed, or more than {SITEMAP_MAX_DROP:.0%}% of the previously published URLs would "
        "disappear), and publish what an interrupted run found (it cannot be resumed then)"),
    _switch("--full", "SITEMAP_REVISIT_FULL", NIGHTLY).says(
        "verify every known URL tonight, whatever the revisit schedule says (a nightly run "
        "otherwise fetches the URLs due and those a change signal names)"),
    Option("--revisit-min", "SITEMAP_REVISIT_MIN", float, "DAYS", group=NIGHTLY).says(
        "the shortest interval between two verifications of a URL, in days (default "
        "{SITEMAP_REVISIT_MIN:g})"),
    Option("--revisit-max", "SITEMAP_REVISIT_MAX", float, "DAYS", group=NIGHTLY).says(
        "the longest interval between two verifications of a URL, in days: every URL is verified "
        "at least this often (default {SITEMAP_REVISIT_MAX:g})"),
    _switch("--resume", "SITEMAP_RESUME").says(
        "continue the run that was interrupted (Ctrl-C, SIGTERM) on this state directory, instead "
        "of starting over"),
    Option("--redis", metavar="URL").says(
        "distribute the crawl: its queue and seen-set live in the Redis database at URL "
        "(redis://host:6379/0) and 'sitemap-crawler worker --redis URL' processes join it; this "
        "one keeps the ledger and publishes (not with --resume)"),
    Option("--no-fetch", action="store_true").says(
        "with --redis or --processes: this process only coordinates (drains the workers' reports "
        "into the ledger and publishes), fetching nothing itself"),
    Option("--processes", type=processes_count, metavar="N|auto").says(
        "crawl with N fetching processes on this machine, this one included unless --no-fetch "
        "('auto': one per core; default: 1, this one); without --redis, through a private Redis "
        "server on a Unix socket in the state directory (a redis-server on PATH, or the processes "
        "extra's)"),
)

#: ``audit``'s options: those of every command that crawls, and its own.
AUDIT = (
    *SITE,
    Option("--sitemap", metavar="URL|FILE", action="append").says(
        "a sitemap to read besides the discovered ones (repeatable; a local file works)"),
    Option("--state", metavar="DIR").says(
        "use the ledger of an earlier crawl in DIR instead of crawling now"),
    Option("--report", metavar="DIR").says("write audit.json and one CSV per class to DIR"),
    Option("--fail-under", type=percent, metavar="PCT").says(
        "exit 5 when coverage is under PCT percent"),
    Option("--fail-on", type=classes, metavar="CLASS,...", default=[]).says(
        "exit 5 when any of these classes or flags has a URL"),
)

#: ``worker``'s options: the crawl's come from Redis, these apply to this worker alone.
WORKER = (
    Option("--redis", metavar="URL", required=True).says(
        "the crawl's Redis database, as given to crawl --redis"),
    CONCURRENCY.says("concurrent requests of this worker (default: the crawl's)"),
    LOG_LEVEL.says("Scrapy's log on stderr (default: %(default)s)"),
    SET.says("set any Scrapy or SITEMAP_* setting for this worker (repeatable)"),
)

#: ``explain``'s options: it reads a crawl's ledger, it does not crawl.
EXPLAIN = (
    URL.says(
        "the URL as you have it: any spelling of a crawled URL, a path of the site (/about.html), "
        "or its public --base-url address"),
    Option("--state", metavar="DIR").says(
        "the crawl's state directory (default: {SITEMAP_OUT_DIR}.sitemap-state, that of crawl "
        "--out {SITEMAP_OUT_DIR})"),
    Option("--out", metavar="DIR").says(
        "the crawl's --out: its state directory is found as crawl finds it (DIR.sitemap-state)"),
    Option("--json", action="store_true").says("print the answer as one JSON object"),
)

#: ``export``'s options: the ledger it reads is found as ``explain`` finds it.
EXPORT = (
    *EXPLAIN[1:3],
    Option("--file", metavar="FILE").says(
        "where to write (default: ledger.jsonl in the state directory; - for standard output)"),
)
# fmt: on

#: The option that sets each setting, named beside the setting in its error.
FLAG_OF = {o.setting: o.flag for o in (*CRAWL, *AUDIT, *WORKER) if o.setting and o.flag[0] == "-"}
