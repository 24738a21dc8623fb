"""One distributed crawl's state in Redis: its keys, and the atomic moves between them.

Every key of a crawl starts with ``sitemap-crawler:<crawl id>:``; one Redis database
runs one crawl at a time, named by ``sitemap-crawler:crawl``:

==========================  ======  =======================================================
key                         type    holds
==========================  ======  =======================================================
``sitemap-crawler:crawl``   string  the id of the crawl running on this database
``…:config``                string  JSON: start URL, shared settings, version, timeout
``…:queue``                 zset    serialized requests to fetch, scored by link depth
                                    (scrapy-redis's ``PriorityQueue``: breadth-first)
``…:seen``                  set     fingerprints of every request ever queued
                                    (scrapy-redis's ``RFPDupeFilter``)
``…:inflight:<process>``    hash    requests a process took from the queue and has not
                                    reported yet: SHA-1 of the request -> the request
``…:alive:<process>``       string  the process's heartbeat; expires after the timeout
``…:workers``               set     the processes that took requests
``…:reports``               list    pickled page reports, for the coordinator, each
                                    with the outcomes of the URLs it led to
``…:held``                  set     fingerprints held aside by the depth cap (a
                                    shorter path lets them in)
``…:counters``              hash    counter -> its count (the counted rules)
``…:previous``              hash    key -> the previous run's record (zlib'd JSON) of
                                    each URL that can be asked conditionally
``…:done``                  string  why the crawl ended; workers stop when it appears
==========================  ======  =======================================================

A request is always in exactly one of three places: the queue, one process's
in-flight hash, or (as its page's report) the report list. Each move between them is
one Lua script, so it happens whole or not at all (docs/distributed.md, "Nothing is
lost"), and the crawl is over exactly when the three places are empty at once.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import socket
import time
from collections.abc import Sequence
from datetime import date
from typing import TYPE_CHECKING, Any, cast

from crawler import __version__
from crawler.core import clock
from crawler.crawl.counted import Outcome

if TYPE_CHECKING:
    from redis import Redis
    from scrapy.settings import BaseSettings

NAMESPACE = "sitemap-crawler"
CURRENT = f"{NAMESPACE}:crawl"
COORDINATOR = "coordinator"
# How long the key saying why a crawl ended outlives it, for workers still finishing.
DONE_TTL = 3600
# Seconds the coordinator counts as alive after registering a crawl, before its
# first heartbeat (or the heartbeat timeout, if longer).
START_SECONDS = 60.0

# KEYS: queue, inflight, workers, done. ARGV: process.
_CLAIM = """
if redis.call('EXISTS', KEYS[4]) == 1 then return false end
local popped = redis.call('ZPOPMIN', KEYS[1])
if popped[1] == nil then return false end
redis.call('HSET', KEYS[2], redis.sha1hex(popped[1]), popped[1])
redis.call('SADD', KEYS[3], ARGV[1])
return popped[1]
"""
# KEYS: seen, queue. ARGV: fingerprint ('' to queue unconditionally), request, score.
_ENQUEUE = """
if ARGV[1] ~= '' and redis.call('SADD', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
return 1
"""
# The report of one page, with the claims of the URLs it led to, applied by the steps
# of crawler/crawl/counted.py. KEYS: inflight, reports, done, seen, held, counters,
# queue. ARGV: claim ('' for none), report, then for each URL: fingerprint, claim
# (JSON: counts, after), request, score. Pushes the outcomes (JSON, after their
# 8-digit length), then the report.
_REPORT = """
if redis.call('EXISTS', KEYS[3]) == 1 then return -1 end
if ARGV[1] ~= '' and redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 0 end
local outcomes = {}
for i = 3, #ARGV, 4 do
  local fp, claim = ARGV[i], cjson.decode(ARGV[i + 1])
  local seen, refused = 'known', 0
  if redis.call('SADD', KEYS[4], fp) == 1 then
    seen = 'new'
  elseif claim.after == 'queue' and redis.call('SREM', KEYS[5], fp) == 1 then
    seen = 'again'
  end
  if seen ~= 'known' then
    for number, count in ipairs(claim.counts) do
      if tonumber(redis.call('HGET', KEYS[6], count[1]) or '0') >= count[2] then
        refused = number
        break
      end
      redis.call('HINCRBY', KEYS[6], count[1], 1)
    end
    if refused == 0 and claim.after == 'hold' then
      redis.call('SADD', KEYS[5], fp)
    elseif refused == 0 and claim.after == 'queue' then
      redis.call('ZADD', KEYS[7], ARGV[i + 3], ARGV[i + 2])
    end
  end
  outcomes[#outcomes + 1] = {seen, refused}
end
local told = #outcomes > 0 and cjson.encode(outcomes) or '[]'
redis.call('RPUSH', KEYS[2], string.format('%08d', #told) .. told .. ARGV[2])
return 1
"""
# KEYS: workers, queue. ARGV: inflight prefix, alive prefix, the coordinator's name.
_REQUEUE_LOST = """
local lost, moved = 0, 0
for _, w in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  if w ~= ARGV[3] and redis.call('EXISTS', ARGV[2] .. w) == 0 then
    local held = redis.call('HVALS', ARGV[1] .. w)
    for _, m in ipairs(held) do redis.call('ZADD', KEYS[2], -1, m) end
    moved = moved + #held
    redis.call('DEL', ARGV[1] .. w)
    redis.call('SREM', KEYS[1], w)
    lost = lost + 1
  end
end
return {lost, moved}
"""
# KEYS: inflight, queue, workers, alive, done. ARGV: process.
_RELEASE = """
local moved = 0
if redis.call('EXISTS', KEYS[5]) == 0 then
  local held = redis.call('HVALS', KEYS[1])
  for _, m in ipairs(held) do redis.call('ZADD', KEYS[2], -1, m) end
  moved = #held
end
redis.call('DEL', KEYS[1], KEYS[4])
redis.call('SREM', KEYS[3], ARGV[1])
return moved
"""
# KEYS: queue, reports, workers. ARGV: inflight prefix.
_FINISHED = """
if redis.call('ZCARD', KEYS[1]) > 0 or redis.call('LLEN', KEYS[2]) > 0 then return 0 end
for _, w in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  if redis.call('HLEN', ARGV[1] .. w) > 0 then return 0 end
end
return 1
"""
# KEYS: alive, workers, done. ARGV: process, TTL in milliseconds.
_HEARTBEAT = """
local done = redis.call('GET', KEYS[3])
if done then return done end
redis.call('SET', KEYS[1], '1', 'PX', ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
return false
"""
# KEYS: current. ARGV: crawl id.
_FORGET = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class DistributedError(Exception):
    """Redis cannot be used for this crawl; reported as one line."""


class BadRedisUrl(DistributedError):
    """The Redis URL is malformed (a usage error)."""


def claim_id(member: bytes) -> str:
    """The in-flight field of a serialized request (as Lua's ``redis.sha1hex``)."""
    return hashlib.sha1(member).hexdigest()


def connect(url: str, **params: Any) -> Redis:
    """A checked connection to the Redis server at *url*, through scrapy-redis's
    ``get_redis`` (its defaults, plus *params*)."""
    from redis.connection import parse_url
    from redis.exceptions import RedisError
    from scrapy_redis.connection import get_redis
    from scrapy_redis.defaults import REDIS_PARAMS

    try:
        parse_url(url)  # type: ignore[no-untyped-call]  # redis-py leaves it unannotated
    except ValueError as e:
        raise BadRedisUrl(f"bad Redis URL {url!r}: {e}") from None
    server: Redis = get_redis(url=url, **{**REDIS_PARAMS, **params})
    try:
        server.ping()
    except RedisError as e:
        raise DistributedError(f"cannot reach Redis at {url}: {e}") from None
    return server


def outcomes_of(reported: bytes) -> tuple[list[Outcome], bytes]:
    """The outcomes of a report's candidates, and the report (from the report list)."""
    size = int(reported[:8])
    return [Outcome(*told) for told in json.loads(reported[8 : 8 + size])], reported[8 + size :]


def _text(value: bytes | str | None) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


class RedisCrawl:
    """One process's handle on a distributed crawl (see the module docstring).
    *process*: ``coordinator``, or ``host:pid:random`` for a worker; *timeout*: how long
    a process may go without a heartbeat before its in-flight requests are queued again."""

    def __init__(self, server: Redis, crawl_id: str, process: str, timeout: float) -> None:
        self.server = server
        self.id = crawl_id
        self.process = process
        self.timeout = timeout
        prefix = f"{NAMESPACE}:{crawl_id}:"
        self.prefix = prefix
        self.config_key = prefix + "config"
        self.queue = prefix + "queue"
        self.seen = prefix + "seen"
        self.reports = prefix + "reports"
        self.workers = prefix + "workers"
        self.done_key = prefix + "done"
        self.held = prefix + "held"
        self.counters = prefix + "counters"
        self.previous = prefix + "previous"
        self.soft404 = prefix + "soft404"
        self.learned = prefix + "learned"
        self.calendars = prefix + "calendar:"
        self.inflight_prefix = prefix + "inflight:"
        self.alive_prefix = prefix + "alive:"
        self.inflight = self.inflight_prefix + process
        self.alive = self.alive_prefix + process
        self._enqueue = server.register_script(_ENQUEUE)
        self._claim = server.register_script(_CLAIM)
        self._report = server.register_script(_REPORT)
        self._requeue_lost = server.register_script(_REQUEUE_LOST)
        self._release = server.register_script(_RELEASE)
        self._finished = server.register_script(_FINISHED)
        self._heartbeat = server.register_script(_HEARTBEAT)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> RedisCrawl:
        """This process's handle, from the settings the command line set
        (``SITEMAP_REDIS_URL``, ``SITEMAP_REDIS_CRAWL``, ``SITEMAP_REDIS_ROLE``)."""
        from scrapy_redis.connection import get_redis_from_settings

        crawl_id = settings.get("SITEMAP_REDIS_CRAWL")
        if not crawl_id:
            raise DistributedError("SITEMAP_REDIS_CRAWL is not set (start crawls with the CLI)")
        settings_ = settings.copy()
        settings_.set("REDIS_URL", settings.get("SITEMAP_REDIS_URL"))
        server = get_redis_from_settings(settings_)
        if settings.get("SITEMAP_REDIS_ROLE") == COORDINATOR:
            process = COORDINATOR
        else:
            process = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(2)}"
        return cls(server, crawl_id, process, settings.getfloat("SITEMAP_REDIS_WORKER_TIMEOUT"))

    # -- starting and joining --------------------------------------------------------

    @classmethod
    def begin(
        cls, server: Redis, url: str, start_url: str, shared: dict[str, Any], timeout: float
    ) -> RedisCrawl:
        """Register a new crawl of *start_url* on *server* and make it the current
        one; *shared* are the settings every worker takes. A crawl whose coordinator
        stopped sending heartbeats is cleared away; a live one is an error."""
        old = _text(server.get(CURRENT))
        if old is not None:
            stale = cls(server, old, COORDINATOR, timeout)
            if server.exists(stale.alive):
                config = stale.config() or {}
                raise DistributedError(
                    f"crawl {old} of {config.get('start_url', '?')} is running on {url}; "
                    "use another Redis database (redis://host:port/N) for another crawl"
                )
            stale.purge()
        crawl_id = time.strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)
        crawl = cls(server, crawl_id, COORDINATOR, timeout)
        config = {
            "version": __version__,
            "start_url": start_url,
            "settings": shared,
            "timeout": timeout,
            "started": clock.timestamp(),
        }
        pipe = server.pipeline()
        pipe.set(crawl.config_key, json.dumps(config))
        # Alive from now on, so that a worker joining before Scrapy is up finds it so;
        # for START_SECONDS at least (Scrapy may be slow to start on a busy machine).
        pipe.set(crawl.alive, "1", px=int(max(timeout, START_SECONDS) * 1000))
        pipe.execute()
        if not server.set(CURRENT, crawl_id, nx=True):
            crawl.purge()
            raise DistributedError(f"another crawl started on {url} just now")
        return crawl

    @classmethod
    def join(cls, server: Redis, url: str) -> tuple[str, dict[str, Any]]:
        """The id and configuration of the crawl running on *server*."""
        crawl_id = _text(server.get(CURRENT))
        if crawl_id is None:
            raise DistributedError(
                f"no crawl is running on {url} (start one with: sitemap-crawler crawl URL "
                f"--redis {url})"
            )
        crawl = cls(server, crawl_id, "", 0)
        config = crawl.config()
        if config is None or server.exists(crawl.done_key):
            raise DistributedError(f"the crawl on {url} ({crawl_id}) has ended")
        if config.get("version") != __version__:
            raise DistributedError(
                f"the crawl on {url} runs sitemap-crawler {config.get('version')}; "
                f"this is {__version__}"
            )
        if not server.exists(crawl.alive_prefix + COORDINATOR):
            raise DistributedError(f"the coordinator of the crawl on {url} ({crawl_id}) is gone")
        return crawl_id, config

    def config(self) -> dict[str, Any] | None:
        raw = self.server.get(self.config_key)
        return json.loads(raw) if raw else None

    # -- every process -------------------------------------------------------------------

    def heartbeat(self) -> str | None:
        """Say this process is alive; return why the crawl ended, once it has."""
        keys, ttl = [self.alive, self.workers, self.done_key], int(self.timeout * 1000)
        return _text(self._heartbeat(keys=keys, args=[self.process, ttl]))

    def enqueue(self, fingerprint: str | None, member: bytes, score: float) -> bool:
        """Queue a serialized request unless its *fingerprint* is in the seen-set
        already (``None``: queue it anyway); one round trip for both."""
        return bool(
            self._enqueue(keys=[self.seen, self.queue], args=[fingerprint or "", member, score])
        )

    def claim(self) -> bytes | None:
        """Take the shallowest request off the queue; it is in flight here now."""
        keys = [self.queue, self.inflight, self.workers, self.done_key]
        return cast("bytes | None", self._claim(keys=keys, args=[self.process]))

    def report(self, claim: str | None, payload: bytes, found: Sequence[Sequence[Any]] = ()) -> int:
        """Hand a page's report to the coordinator, apply the claims of the URLs it led
        to (*found*, as ``_REPORT`` reads them) and end the page's claim, atomically.
        1: sent; 0: dropped, the claim was taken back (this process was thought lost);
        -1: the crawl is over."""
        args = [claim or "", payload, *(value for one in found for value in one)]
        keys = [self.inflight, self.reports, self.done_key, self.seen, self.held]
        keys += [self.counters, self.queue]
        return int(self._report(keys=keys, args=args))

    def load_previous(self, rows: Any, batch: int = 1000) -> int:
        """Put the previous run's records that a conditional request or a 304 replay
        needs (*rows*: (key, bytes) pairs) into the crawl's ``previous`` hash."""
        pipe, count = self.server.pipeline(transaction=False), 0
        for count, (key, value) in enumerate(rows, 1):
            pipe.hset(self.previous, key, value)
            if count % batch == 0:
                pipe.execute()
        pipe.execute()
        return count

    def previous_row(self, key: str) -> bytes | None:
        # bytes: connections to a crawl do not decode replies (scrapy-redis's REDIS_PARAMS).
        return cast("bytes | None", self.server.hget(self.previous, key))

    def add_print(self, url: str, found: Any) -> None:
        """A fingerprint of the site's "not found" page, for every process."""
        self.server.rpush(self.soft404, json.dumps([url, found]))

    def prints(self) -> list[tuple[str, Any]]:
        raw = cast("list[bytes]", self.server.lrange(self.soft404, 0, -1))
        return [(url, tuple(found)) for url, found in map(json.loads, raw)]

    def add_calendar_entry(self, template: str, day: date) -> None:
        """A date where the crawl entered the date sequence *template* (crawler.crawl.calendars)."""
        self.server.sadd(self.calendars + template, day.isoformat())

    def calendar_entries(self, template: str) -> set[date]:
        days = cast("set[bytes]", self.server.smembers(self.calendars + template))
        return {date.fromisoformat(d.decode()) for d in days}

    def share_learned(self, learned: dict[str, list[str]]) -> None:
        """The parameters the crawl learned so far (crawler.crawl.params), path -> names."""
        self.server.set(self.learned, json.dumps(learned))

    def learned_params(self) -> bytes | None:
        """The parameters learned so far, as JSON (compare it with the last one read)."""
        return cast("bytes | None", self.server.get(self.learned))

    def has_previous(self) -> bool:
        return bool(self.server.exists(self.previous))

    def release(self) -> int:
        """Leave the crawl: what this process holds goes back to the queue."""
        keys = [self.inflight, self.queue, self.workers, self.alive, self.done_key]
        return int(self._release(keys=keys, args=[self.process]))

    def done(self) -> str | None:
        return _text(self.server.get(self.done_key))

    def coordinator_alive(self) -> bool:
        return bool(self.server.exists(self.alive_prefix + COORDINATOR))

    def queued(self) -> int:
        return int(self.server.zcard(self.queue))

    # -- the coordinator -------------------------------------------------------------------

    def pop_reports(self, count: int) -> list[bytes]:
        # LPOP with a count replies with a list (nil when the list is empty), of bytes:
        # connections to a crawl do not decode replies (scrapy-redis's REDIS_PARAMS).
        return cast("list[bytes] | None", self.server.lpop(self.reports, count)) or []

    def requeue_lost(self) -> tuple[int, int]:
        """Queue again what the processes that stopped sending heartbeats held:
        (processes lost, requests queued again)."""
        args = [self.inflight_prefix, self.alive_prefix, COORDINATOR]
        lost, moved = self._requeue_lost(keys=[self.workers, self.queue], args=args)
        return int(lost), int(moved)

    def finished(self) -> bool:
        """Nothing queued, in flight anywhere, or reported and not yet read."""
        keys = [self.queue, self.reports, self.workers]
        return bool(self._finished(keys=keys, args=[self.inflight_prefix]))

    def finish(self, reason: str) -> None:
        """End the crawl: workers see *reason* (the first one given) and stop; every
        other key goes."""
        self.server.set(self.done_key, reason, ex=DONE_TTL, nx=True)
        self.server.register_script(_FORGET)(keys=[CURRENT], args=[self.id])
        self.purge(keep=(self.done_key,))

    def purge(self, keep: tuple[str, ...] = ()) -> None:
        """Delete this crawl's keys (but *keep*)."""
        keys = self.server.scan_iter(match=self.prefix + "*", count=1000)
        doomed = [k for k in keys if _text(k) not in keep]
        for i in range(0, len(doomed), 1000):
            self.server.delete(*doomed[i : i + 1000])
