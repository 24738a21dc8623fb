"""What the product uses of other libraries' internals, held to what it was written
against: a new release that changes one fails here, naming it, instead of breaking a
crawl silently. pyproject.toml pins those libraries to the series tested."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from typing import Any

import pytest
from scrapy.utils.test import get_crawler

scrapy_playwright = pytest.importorskip("scrapy_playwright.handler")
scrapy_redis_queue = pytest.importorskip("scrapy_redis.queue")
scrapy_redis_scheduler = pytest.importorskip("scrapy_redis.scheduler")
scrapy_redis_dupefilter = pytest.importorskip("scrapy_redis.dupefilter")

Handler = scrapy_playwright.ScrapyPlaywrightDownloadHandler


def shape(function: Callable[..., Any]) -> tuple[tuple[str, ...], bool]:
    """*function*'s parameters (``*args``, ``name=default``) and whether it is a
    coroutine function: what an override or a call depends on, without annotations."""
    params = []
    for p in inspect.signature(function).parameters.values():
        name = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name
        if p.kind is p.KEYWORD_ONLY:
            name = "kw:" + name
        if p.default is not p.empty:
            name += f"={p.default!r}"
        params.append(name)
    return tuple(params), inspect.iscoroutinefunction(function)


#: crawler.fetch.browser.Browser: scrapy-playwright's private methods it overrides
#: (the first three) or calls, as of scrapy-playwright 0.0.48.
PLAYWRIGHT_PRIVATE = {
    "_create_browser_context": (("self", "name", "context_kwargs", "spider=None"), True),
    "_create_page": (("self", "request", "spider"), True),
    "_download_request_with_retry": (("self", "request", "spider"), True),
    "_launch": (("self",), True),
    "_increment_request_stats": (("self", "request"), False),
    "_increment_response_stats": (("self", "response"), False),
    # Public, overridden around the private ones.
    "__init__": (("self", "crawler"), False),
    "download_request": (("self", "request"), True),
}

#: crawler.distributed.scheduler: the scrapy-redis classes it subclasses and the
#: constructors it calls (public, but a 0.x library's).
REDIS_HOOKS = {
    (scrapy_redis_queue.PriorityQueue, "__init__"): (
        ("self", "server", "spider", "key", "serializer=None"),
        False,
    ),
    (scrapy_redis_scheduler.Scheduler, "__init__"): (
        (
            "self",
            "server",
            "persist=False",
            "flush_on_start=False",
            "queue_key='%(spider)s:requests'",
            "queue_cls='scrapy_redis.queue.PriorityQueue'",
            "dupefilter=None",
            "dupefilter_key='%(spider)s:dupefilter'",
            "dupefilter_cls='scrapy_redis.dupefilter.RFPDupeFilter'",
            "idle_before_close=0",
            "serializer=None",
        ),
        False,
    ),
    (scrapy_redis_dupefilter.RFPDupeFilter, "__init__"): (
        ("self", "server", "key", "debug=False"),
        False,
    ),
}


@pytest.mark.parametrize(("name", "written_for"), PLAYWRIGHT_PRIVATE.items())
def test_scrapy_playwright_methods_the_browser_hooks(
    name: str, written_for: tuple[tuple[str, ...], bool]
) -> None:
    method = getattr(Handler, name, None)
    assert method is not None, (
        f"scrapy-playwright no longer has {name}: see crawler/fetch/browser.py"
    )
    assert shape(method) == written_for, (
        f"scrapy-playwright's {name} changed: crawler/fetch/browser.py was written against "
        f"{written_for}, the installed version has {shape(method)}"
    )


def test_scrapy_playwright_state_the_browser_reads() -> None:
    """The attributes crawler.fetch.browser.Browser sets or reads on the handler."""
    config = {f.name for f in dataclasses.fields(scrapy_playwright.Config)}
    used = {"browser_type_name", "launch_options", "max_pages_per_context", "navigation_timeout_ms"}
    assert used <= config, f"scrapy-playwright's Config lost {used - config}"
    wrapper = {f.name for f in dataclasses.fields(scrapy_playwright.BrowserContextWrapper)}
    assert "context" in wrapper, "scrapy-playwright's BrowserContextWrapper lost context"
    handler = Handler(get_crawler())
    assert isinstance(handler.context_wrappers, dict), "scrapy-playwright: context_wrappers"
    assert handler.stats is not None, "scrapy-playwright: stats"


@pytest.mark.parametrize(("hook", "written_for"), REDIS_HOOKS.items())
def test_scrapy_redis_classes_the_scheduler_extends(
    hook: tuple[type, str], written_for: tuple[tuple[str, ...], bool]
) -> None:
    cls, name = hook
    where = f"scrapy-redis's {cls.__name__}.{name}"
    assert shape(getattr(cls, name)) == written_for, (
        f"{where} changed: crawler/distributed/scheduler.py was written against {written_for}, "
        f"the installed version has {shape(getattr(cls, name))}"
    )


def test_no_private_method_of_scrapy_redis_is_used() -> None:
    """The queue stores Scrapy's own dict of a request (``Request.to_dict``,
    ``request_from_dict``), not through scrapy-redis's private encoder."""
    from crawler.distributed import scheduler, sharing

    for module in (scheduler, sharing):
        source = inspect.getsource(module)
        for private in ("_encode_request", "_decode_request"):
            assert private not in source, (module.__name__, private)
