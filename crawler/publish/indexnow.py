"""IndexNow: telling search engines which URLs a run published (docs/around.md, "IndexNow").

The protocol (https://www.indexnow.org/documentation): the key (:func:`valid_key`), the
key file that proves the host (:func:`key_location`, :func:`check_key`), the JSON
submission of at most :data:`MAX_BATCH` URLs (:func:`submit`) and its answers
(``_MEANINGS``). Beyond docs/around.md: no answer is retried like a 429 or a 5xx, after
``backoff * 2**n`` seconds or the answer's ``Retry-After`` (in seconds; an HTTP-date is
not read), at most :data:`MAX_DELAY`; a redirect fails the batch at once (urllib would
turn the POST into a GET). The first failed batch ends the submission: the later ones
carry the same host, key and key location, and an endpoint that kept failing or asked us
to slow down is not sent more. A usage error raises :class:`ValueError` before anything
is sent: it would only be refused (422).

Why the standard library's urllib, and not Scrapy or another client: one short exchange
per run, after Scrapy has stopped, from plain code; urllib needs no reactor and no new
dependency. Requests to a loopback host (the tests' servers) go direct, whatever proxies
the environment names; others use the environment's proxies, as Scrapy's own requests do.
"""

from __future__ import annotations

import http.client
import ipaddress
import json
import re
import ssl
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from email.message import Message
from http import HTTPStatus
from typing import Any
from urllib.parse import urljoin, urlsplit

from crawler.core.defaults import setting_default
from crawler.sitemaps.model import quote

#: The shared endpoint: every engine taking part receives what it is sent.
DEFAULT_ENDPOINT: str = setting_default("SITEMAP_INDEXNOW_ENDPOINT")
#: URLs in one request, at most ("up to 10,000 URLs per post").
MAX_BATCH = 10_000
#: The longest wait between two attempts, in seconds (Retry-After included).
MAX_DELAY = 60.0
#: The crawl's own default User-Agent.
DEFAULT_USER_AGENT: str = setting_default("USER_AGENT")
CONTENT_TYPE = "application/json; charset=utf-8"

_KEY = re.compile(r"[A-Za-z0-9-]{8,128}")
# The key file is read up to this many bytes: a key and a line break are far less.
_KEY_FILE_LIMIT = 1024
# An error answer's body is quoted up to this many characters.
_QUOTE_LIMIT = 200
_DIGITS = re.compile(r"\s*(\d+)\s*")

_MEANINGS = {
    200: "URLs submitted",
    202: "URLs received, key validation pending",
    400: "invalid format",
    403: "key not valid (key file not found, or the key is not in it)",
    422: "URLs that don't belong to the host, or a key not matching the protocol's schema",
    429: "too many requests (potential spam)",
}


def valid_key(key: str) -> bool:
    """Whether *key* is an IndexNow key: 8 to 128 of a-z, A-Z, 0-9 and ``-``."""
    return _KEY.fullmatch(key) is not None


def _check_key_text(key: str) -> None:
    if not valid_key(key):
        raise ValueError(f"not an IndexNow key (8 to 128 of a-z, A-Z, 0-9, '-'): {key!r}")


def key_location(site_root: str, key: str, location: str | None) -> str:
    """The URL of the key file: *location* when given (absolute, or relative to the
    site's root), else ``<root>/<key>.txt``. The root is *site_root*'s scheme and
    host (and port): the default key file lives at the root of the host, whatever
    path *site_root* has. ValueError for an invalid key, a *site_root* that is no
    http(s) URL, or a *location* on another host."""
    _check_key_text(key)
    parts = urlsplit(site_root)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {site_root!r}")
    root = f"{parts.scheme}://{parts.netloc}/"
    if location is None:
        return f"{root}{key}.txt"
    found = urljoin(root, location)
    if urlsplit(found).scheme not in ("http", "https"):
        raise ValueError(f"the key location is not an http(s) URL: {location!r}")
    if _norm_host(urlsplit(found).hostname or "") != _norm_host(parts.hostname):
        raise ValueError(
            f"the key location {found} is not on the site's host {parts.netloc}: "
            "IndexNow reads the key file on the host it proves"
        )
    return found


def check_key(
    location: str,
    key: str,
    timeout: float = 10,
    *,
    user_agent: str = DEFAULT_USER_AGENT,
    context: ssl.SSLContext | None = None,
) -> str | None:
    """Fetch the key file at *location*: None when it answers 200 with exactly *key*
    (one trailing ``\\n`` or ``\\r\\n`` allowed), else one line saying what is wrong.
    Redirects are reported, not followed. ValueError for an invalid *key*. *context*:
    the crawl's TLS policy for the site (crawler.fetch.tls; None: Python's default)."""
    _check_key_text(key)
    what = f"the key file {location}"
    request = urllib.request.Request(location, headers={"User-Agent": user_agent})
    try:
        with _opener(location, context).open(request, timeout=timeout) as response:
            status = response.status
            body: bytes = response.read(_KEY_FILE_LIMIT + 1)
    except urllib.error.HTTPError as error:
        with error:
            answer = f"{what} answered HTTP {_phrase(error.code)}"
            if 300 <= error.code < 400:
                return f"{answer}{_redirect(error.headers)}, not followed: serve the key file there"
            return answer
    except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
        return f"{what} could not be reached: {_reason(error)}"
    if status != 200:
        return f"{what} answered HTTP {_phrase(status)}, not 200 OK"
    if len(body) > _KEY_FILE_LIMIT:
        return f"{what} holds something else than the key (more than {_KEY_FILE_LIMIT} bytes)"
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return f"{what} holds something else than the key (not UTF-8 text)"
    if text.endswith("\n"):
        text = text[: -2 if text.endswith("\r\n") else -1]
    if text != key:
        return f"{what} holds something else than the key: {quote(text, _QUOTE_LIMIT)}"
    return None


@dataclass(frozen=True, slots=True)
class BatchResult:
    """One batch of URLs: the last answer's *status* (None: no answer, or not sent),
    its *urls*, the *attempts* made (0: not sent) and what happened, in words
    (*meaning*: ``"202 Accepted: URLs received, key validation pending"``)."""

    status: int | None
    urls: int
    attempts: int
    meaning: str

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


@dataclass(frozen=True, slots=True)
class Outcome:
    """What :func:`submit` did. *submitted*: the URLs of the accepted batches;
    *batches*: each batch, in order, the unsent ones included; *ok*: every batch
    accepted (true for nothing to submit); *message*: one line for the run's
    summary."""

    submitted: int
    batches: list[BatchResult]
    ok: bool
    message: str

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "submitted": self.submitted,
            "message": self.message,
            "batches": [asdict(batch) for batch in self.batches],
        }


def submit(
    urls: Sequence[str],
    *,
    host: str,
    key: str,
    key_location: str,
    endpoint: str,
    batch: int = MAX_BATCH,
    retries: int = 3,
    backoff: float = 1.0,
    timeout: float = 30,
    sleep: Callable[[float], None] = time.sleep,
    user_agent: str = DEFAULT_USER_AGENT,
) -> Outcome:
    """Submit *urls* to *endpoint* for *host* (a host name, or ``host:port``), with *key*
    and the key file at *key_location*; the batches, retries and stops: the module's
    docstring. *sleep* waits between attempts (the clock, for tests). ValueError, before
    anything is sent, for a bad argument, or a URL not on *host* or not under the key
    file's directory."""
    _check_key_text(key)
    if not 1 <= batch <= MAX_BATCH:
        raise ValueError(f"batch must be 1 to {MAX_BATCH:,} URLs, not {batch}")
    if retries < 0 or backoff < 0 or timeout <= 0:
        raise ValueError("retries and backoff must not be negative, timeout must be positive")
    if urlsplit(endpoint).scheme not in ("http", "https") or not urlsplit(endpoint).hostname:
        raise ValueError(f"the endpoint is not an http(s) URL: {endpoint!r}")
    on_host = _host_check(host)
    if not on_host(key_location):
        raise ValueError(f"the key location {key_location} is not on {host}")
    scope = urlsplit(key_location).path.rpartition("/")[0] + "/"
    unique = list(dict.fromkeys(urls))
    for url in unique:
        if not on_host(url):
            raise ValueError(f"{url} is not on {host}: IndexNow takes one host's URLs")
        if not (urlsplit(url).path or "/").startswith(scope):
            raise ValueError(
                f"{url} is not under {scope}, the directory of the key file {key_location}"
            )
    if not unique:
        return Outcome(0, [], True, "IndexNow: nothing to submit (no URLs)")

    opener = _opener(endpoint)

    def post(chunk: list[str]) -> BatchResult:
        """POST one batch, retrying as the module's docstring says."""
        body = json.dumps(
            {"host": host, "key": key, "keyLocation": key_location, "urlList": chunk},
            ensure_ascii=False,
        ).encode("utf-8")
        headers = {"Content-Type": CONTENT_TYPE, "User-Agent": user_agent}
        earlier: list[str] = []
        attempt = 0
        while True:
            attempt += 1
            request = urllib.request.Request(endpoint, data=body, method="POST", headers=headers)
            retry_after: float | None = None
            try:
                with opener.open(request, timeout=timeout) as response:
                    status: int | None = response.status
                    response.read(_KEY_FILE_LIMIT)
                meaning = _status_text(status)
            except urllib.error.HTTPError as error:
                with error:
                    status = error.code
                    said = _said(error)
                    retry_after = _retry_after(error.headers)
                    meaning = f"{_status_text(status)}{_redirect(error.headers)}{said}"
            except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
                status = None
                meaning = f"no answer ({_reason(error)})"
            if not _retryable(status) or attempt > retries:
                break
            earlier.append(meaning.partition(":")[0] if status is not None else meaning)
            delay = retry_after if retry_after is not None else backoff * 2 ** (attempt - 1)
            sleep(min(delay, MAX_DELAY))
        if earlier:
            meaning += f" (after {_plural(len(earlier), 'retry', 'retries')}: {', '.join(earlier)})"
        return BatchResult(status, len(chunk), attempt, meaning)

    chunks = [unique[i : i + batch] for i in range(0, len(unique), batch)]
    results: list[BatchResult] = []
    for chunk in chunks:
        results.append(post(chunk))
        if not results[-1].ok:
            break
    return _outcome(results, chunks, endpoint)


# -- the outcome -----------------------------------------------------------------------


def _retryable(status: int | None) -> bool:
    """Worth another try: no answer, 429 Too Many Requests or a server error."""
    return status is None or status == 429 or status >= 500


def _outcome(results: list[BatchResult], chunks: list[list[str]], endpoint: str) -> Outcome:
    submitted = sum(r.urls for r in results if r.ok)
    total = sum(len(c) for c in chunks)
    requests = f" in {len(chunks):,} requests" if len(chunks) > 1 else ""
    last = results[-1]
    if last.ok:
        kinds = Counter(_status_text(r.status) for r in results)
        answers = "; ".join(f"{n} x {k}" if len(kinds) > 1 else k for k, n in kinds.items())
        message = (
            f"IndexNow: {_plural(submitted, 'URL')} submitted to {endpoint}{requests} ({answers})"
        )
        return Outcome(submitted, results, True, message)
    unsent = chunks[len(results) :]
    refused = not _retryable(last.status)
    if refused:
        why = f"not sent: an earlier batch was refused ({_phrase(last.status or 0)}), "
        why += "and this one would be too"
    elif last.status == 429:
        why = "not sent: the endpoint asked to slow down (429 Too Many Requests)"
    else:
        why = "not sent: the endpoint kept failing"
    batches = results + [BatchResult(None, len(c), 0, why) for c in unsent]
    failed = (
        f"batch {len(results)} of {len(chunks)} ({_plural(last.urls, 'URL')}) failed"
        if len(chunks) > 1
        else "failed"
    )
    message = f"IndexNow: {failed} at {endpoint}: {last.meaning}"
    if submitted:
        message += f"; {_plural(submitted, 'URL')} of {total:,} submitted before"
    if unsent:
        left = sum(len(c) for c in unsent)
        later = _plural(len(unsent), "later batch", "later batches")
        message += f"; {later} ({_plural(left, 'URL')}) not sent"
        if refused:
            message += ", since they would be refused the same way"
    return Outcome(submitted, batches, False, message)


# -- helpers ---------------------------------------------------------------------------


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are answers, not followed: a redirected POST would become a GET,
    and a key file must be served at its own location."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _opener(url: str, context: ssl.SSLContext | None = None) -> urllib.request.OpenerDirector:
    """Direct for a loopback host, else through the environment's proxies; HTTPS with
    *context* when given."""
    proxies = urllib.request.ProxyHandler({} if _loopback(url) else None)
    handlers: list[urllib.request.BaseHandler] = [proxies, _NoRedirect()]
    if context is not None:
        handlers.append(urllib.request.HTTPSHandler(context=context))
    return urllib.request.build_opener(*handlers)


def _loopback(url: str) -> bool:
    name = urlsplit(url).hostname or ""
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _norm_host(name: str) -> str:
    name = name.lower().rstrip(".")
    try:
        return name.encode("idna").decode("ascii")
    except UnicodeError:
        return name


def _host_check(host: str) -> Callable[[str], bool]:
    """Whether a URL is an http(s) URL on *host* (its port too, when *host* has one)."""
    given = urlsplit(f"//{host}")
    if not given.hostname or given.path or given.username or given.password:
        raise ValueError(f"not a host name: {host!r}")
    name = _norm_host(given.hostname)
    port = given.port

    def check(url: str) -> bool:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            return False
        if _norm_host(parts.hostname) != name:
            return False
        return port is None or (parts.port or _DEFAULT_PORTS[parts.scheme]) == port

    return check


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _phrase(status: int) -> str:
    """``"404 Not Found"``; ``"599"`` for a code without a phrase."""
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


def _status_text(status: int | None) -> str:
    """An endpoint's answer in words: ``"403 Forbidden: key not valid (...)"``."""
    if status is None:
        return "no answer"
    text = _phrase(status)
    if status in _MEANINGS:
        return f"{text}: {_MEANINGS[status]}"
    if status >= 500:
        return f"{text}: server error"
    if 300 <= status < 400:
        return f"{text}: a redirect, not followed"
    return text if 200 <= status < 300 else f"{text}: not an answer IndexNow defines"


def _redirect(headers: Message | None) -> str:
    target = headers.get("Location") if headers is not None else None
    return f" (to {target})" if target else ""


def _said(error: urllib.error.HTTPError) -> str:
    """What an error answer's body says, quoted, if anything."""
    try:
        raw = error.read(_KEY_FILE_LIMIT)
    except (OSError, http.client.HTTPException):
        return ""
    text = " ".join(raw.decode("utf-8", "replace").split())
    return f"; the endpoint said: {quote(text, _QUOTE_LIMIT)}" if text else ""


def _retry_after(headers: Message | None) -> float | None:
    value = headers.get("Retry-After") if headers is not None else None
    match = _DIGITS.fullmatch(value) if value else None
    return float(match.group(1)) if match else None


def _reason(error: BaseException) -> str:
    reason: object = error.reason if isinstance(error, urllib.error.URLError) else error
    if isinstance(reason, TimeoutError) or "timed out" in str(reason):
        return "timed out"
    text = str(reason) or type(reason).__name__
    return " ".join(text.split())


def _plural(n: int, one: str, many: str | None = None) -> str:
    return f"{n:,} {one if n == 1 else (many or one + 's')}"
