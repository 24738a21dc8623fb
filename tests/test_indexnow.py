"""crawler.publish.indexnow against a real, scripted IndexNow endpoint on 127.0.0.1.

Every test runs against :class:`tests.indexnowserver.IndexNowServer` (a real HTTP
server in a thread) and under a network watch: a connection or a DNS lookup for
anything but 127.0.0.1 fails the test, so the default endpoint is never contacted.
The back-off waits go through a fake ``sleep`` that records them (the clock, not
the code under test); real time-outs are a fraction of a second.
"""

from __future__ import annotations

import inspect
import json
import socket
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from crawler.publish import indexnow
from crawler.publish.indexnow import (
    DEFAULT_ENDPOINT,
    MAX_BATCH,
    MAX_DELAY,
    BatchResult,
    Outcome,
    check_key,
    key_location,
    submit,
    valid_key,
)
from tests.conftest import NetworkWatch
from tests.indexnowserver import Answer, IndexNowServer

KEY = "3f1c0a9e-7b2d-4e5f-8a6b-9c0d1e2f3a4b"
JSON_TYPE = "application/json; charset=utf-8"


@pytest.fixture(autouse=True)
def local_only() -> Iterator[list[tuple[str, Any]]]:
    """Every connection and DNS lookup a test makes is for 127.0.0.1."""
    with NetworkWatch() as network:
        yield network
    strangers = [(kind, where) for kind, where in network if where[0] != "127.0.0.1"]
    assert not strangers, f"contacted something else than 127.0.0.1: {strangers}"


@pytest.fixture(autouse=True)
def no_proxy_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)


@pytest.fixture
def server() -> Iterator[IndexNowServer]:
    srv = IndexNowServer().start()
    try:
        yield srv
    finally:
        srv.stop()


class Clock:
    """A fake ``sleep``: records the waits instead of waiting."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def closed_port() -> int:
    """A port of 127.0.0.1 that nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def send(server: IndexNowServer, urls: list[str], **options: Any) -> Outcome:
    """submit() to *server*'s endpoint, for its host, with the default key file."""
    options.setdefault("host", "127.0.0.1")
    options.setdefault("key", KEY)
    options.setdefault("key_location", server.url(f"/{KEY}.txt"))
    options.setdefault("endpoint", server.url("/indexnow"))
    options.setdefault("sleep", Clock())
    options.setdefault("timeout", 5)
    return submit(urls, **options)


def pages(server: IndexNowServer, n: int) -> list[str]:
    return [server.url(f"/page-{i}.html") for i in range(1, n + 1)]


# -- keys and key files ----------------------------------------------------------------


@pytest.mark.parametrize(
    "key",
    [KEY, "abcdEFGH", "a" * 128, "12345678", "--------", "0123456789abcdef0123456789abcdef"],
)
def test_valid_keys(key: str) -> None:
    assert valid_key(key)


@pytest.mark.parametrize(
    "key",
    [
        "",
        "abcdefg",  # 7
        "a" * 129,
        "abcd_efgh",  # underscore
        "abcd efgh",
        "abcdefgh\n",
        "abcdéfgh",
        "abcd١٢٣٤",  # Arabic-Indic digits are digits to Python, not to IndexNow
        "abcd.efgh",
    ],
)
def test_invalid_keys(key: str) -> None:
    assert not valid_key(key)


def test_key_location_default_is_the_root_of_the_host() -> None:
    assert key_location("https://example.com", KEY, None) == f"https://example.com/{KEY}.txt"
    assert key_location("https://example.com/", KEY, None) == f"https://example.com/{KEY}.txt"
    # Whatever path the site root has, the default key file is at the host's root.
    assert (
        key_location("https://www.example.com/blog/index.html?x=1", KEY, None)
        == f"https://www.example.com/{KEY}.txt"
    )
    assert key_location("http://127.0.0.1:8080/", KEY, None) == f"http://127.0.0.1:8080/{KEY}.txt"


def test_key_location_given() -> None:
    root = "https://example.com/"
    given = "https://example.com/catalog/mykey.txt"
    assert key_location(root, KEY, given) == given
    assert key_location(root, KEY, "/catalog/mykey.txt") == given
    assert key_location(root, KEY, "keys/k.txt") == "https://example.com/keys/k.txt"
    # Same host, other scheme: IndexNow mixes http and https URLs.
    assert key_location(root, KEY, "http://EXAMPLE.com/k.txt") == "http://EXAMPLE.com/k.txt"


@pytest.mark.parametrize(
    ("root", "key", "location", "words"),
    [
        ("https://example.com/", "short", None, "not an IndexNow key"),
        ("example.com", KEY, None, "not an http\\(s\\) URL"),
        ("ftp://example.com/", KEY, None, "not an http\\(s\\) URL"),
        ("https://example.com/", KEY, "https://cdn.example.net/k.txt", "not on the site's host"),
        ("https://example.com/", KEY, "https://www.example.com/k.txt", "not on the site's host"),
        ("https://example.com/", KEY, "ftp://example.com/k.txt", "not an http\\(s\\) URL"),
    ],
)
def test_key_location_refuses(root: str, key: str, location: str | None, words: str) -> None:
    with pytest.raises(ValueError, match=words):
        key_location(root, key, location)


@pytest.mark.parametrize("content", [KEY.encode(), KEY.encode() + b"\n", KEY.encode() + b"\r\n"])
def test_check_key_served(server: IndexNowServer, content: bytes) -> None:
    server.files[f"/{KEY}.txt"] = Answer(200, content, {"Content-Type": "text/plain"})
    assert check_key(server.url(f"/{KEY}.txt"), KEY, timeout=5) is None
    [got] = server.gets
    assert got.method == "GET"
    assert got.path == f"/{KEY}.txt"
    assert got.headers["User-Agent"].startswith("sitemap-crawler/")


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (Answer(200, b"another-key-1234"), "holds something else than the key: 'another-key-1234'"),
        (Answer(200, b""), "holds something else than the key: ''"),
        (Answer(200, f" {KEY} ".encode()), f"holds something else than the key: ' {KEY} '"),
        (Answer(200, f"{KEY}\n\n".encode()), "holds something else than the key: "),
        (Answer(200, f"{KEY}\n{KEY}".encode()), "holds something else than the key: "),
        (Answer(200, KEY.upper().encode()), "holds something else than the key: "),
        (Answer(200, b"\xff\xfe" + KEY.encode("utf-16-le")), "(not UTF-8 text)"),
        (Answer(200, b"x" * 5000), "(more than 1024 bytes)"),
        (Answer(404, b"not here"), "answered HTTP 404 Not Found"),
        (Answer(403), "answered HTTP 403 Forbidden"),
        (Answer(500), "answered HTTP 500 Internal Server Error"),
        (Answer(204), "answered HTTP 204 No Content, not 200 OK"),
        (
            Answer(301, headers={"Location": "https://www.example.com/k.txt"}),
            "answered HTTP 301 Moved Permanently (to https://www.example.com/k.txt), "
            "not followed: serve the key file there",
        ),
    ],
)
def test_check_key_problems(server: IndexNowServer, answer: Answer, expected: str) -> None:
    location = server.url(f"/{KEY}.txt")
    server.files[f"/{KEY}.txt"] = answer
    problem = check_key(location, KEY, timeout=5)
    assert problem is not None
    assert problem.startswith(f"the key file {location} ")
    assert expected in problem
    assert "\n" not in problem
    assert len(server.gets) == 1  # a redirect is not followed


def test_check_key_missing_file_is_a_404(server: IndexNowServer) -> None:
    location = server.url(f"/{KEY}.txt")
    assert (
        check_key(location, KEY, timeout=5)
        == f"the key file {location} answered HTTP 404 Not Found"
    )


def test_check_key_unreachable() -> None:
    location = f"http://127.0.0.1:{closed_port()}/{KEY}.txt"
    problem = check_key(location, KEY, timeout=5)
    assert problem is not None
    assert problem.startswith(f"the key file {location} could not be reached: ")
    assert "refused" in problem.lower()


def test_check_key_times_out(server: IndexNowServer) -> None:
    server.files[f"/{KEY}.txt"] = Answer(200, KEY.encode(), delay=2)
    location = server.url(f"/{KEY}.txt")
    assert check_key(location, KEY, timeout=0.3) == (
        f"the key file {location} could not be reached: timed out"
    )


def test_check_key_refuses_an_invalid_key(server: IndexNowServer) -> None:
    with pytest.raises(ValueError, match="not an IndexNow key"):
        check_key(server.url("/short.txt"), "short")
    assert server.gets == []


# -- submissions -----------------------------------------------------------------------


def test_submit_posts_what_the_protocol_says(
    server: IndexNowServer, local_only: list[tuple[str, Any]]
) -> None:
    server.script = [Answer(200)]
    urls = pages(server, 3)
    clock = Clock()
    outcome = send(server, urls, sleep=clock)

    [post] = server.received
    assert post.method == "POST"
    assert post.path == "/indexnow"
    assert post.headers["Content-Type"] == JSON_TYPE
    assert post.headers["User-Agent"].startswith("sitemap-crawler/")
    assert post.json == {
        "host": "127.0.0.1",
        "key": KEY,
        "keyLocation": server.url(f"/{KEY}.txt"),
        "urlList": urls,
    }
    assert server.gets == []  # submit() does not fetch the key file itself
    assert ("connect", ("127.0.0.1", server.port)) in local_only  # the watch sees connections
    assert clock.waits == []

    assert outcome.ok
    assert outcome.submitted == 3
    assert outcome.batches == [BatchResult(200, 3, 1, "200 OK: URLs submitted")]
    assert outcome.message == (
        f"IndexNow: 3 URLs submitted to {server.url('/indexnow')} (200 OK: URLs submitted)"
    )


def test_submit_accepted_pending_validation(server: IndexNowServer) -> None:
    server.script = [Answer(202)]
    outcome = send(server, pages(server, 1))
    assert outcome.ok
    assert outcome.submitted == 1
    assert outcome.message == (
        f"IndexNow: 1 URL submitted to {server.url('/indexnow')} "
        "(202 Accepted: URLs received, key validation pending)"
    )


def test_submit_body_is_utf8_json(server: IndexNowServer) -> None:
    server.script = [Answer(200)]
    url = server.url("/caf%C3%A9?q=1&r=é")
    send(server, [url])
    [post] = server.received
    assert post.body == json.dumps(
        {
            "host": "127.0.0.1",
            "key": KEY,
            "keyLocation": server.url(f"/{KEY}.txt"),
            "urlList": [url],
        },
        ensure_ascii=False,
    ).encode("utf-8")


def test_submit_batches(server: IndexNowServer) -> None:
    server.script = [Answer(200), Answer(202), Answer(200)]
    urls = pages(server, 7)
    outcome = send(server, urls, batch=3)

    assert [post.json["urlList"] for post in server.received] == [urls[0:3], urls[3:6], urls[6:7]]
    assert {post.path for post in server.received} == {"/indexnow"}
    for post in server.received:
        assert post.json["host"] == "127.0.0.1"
        assert post.json["key"] == KEY
        assert post.json["keyLocation"] == server.url(f"/{KEY}.txt")
    assert outcome.ok
    assert outcome.submitted == 7
    assert [(b.status, b.urls, b.attempts) for b in outcome.batches] == [
        (200, 3, 1),
        (202, 3, 1),
        (200, 1, 1),
    ]
    assert outcome.message == (
        f"IndexNow: 7 URLs submitted to {server.url('/indexnow')} in 3 requests "
        "(2 x 200 OK: URLs submitted; 1 x 202 Accepted: URLs received, key validation pending)"
    )


def test_submit_batch_of_exactly_the_size(server: IndexNowServer) -> None:
    server.script = [Answer(200), Answer(200)]
    urls = pages(server, 6)
    outcome = send(server, urls, batch=3)
    assert [len(post.json["urlList"]) for post in server.received] == [3, 3]
    assert outcome.message.endswith("in 2 requests (200 OK: URLs submitted)")


def test_submit_deduplicates_in_order(server: IndexNowServer) -> None:
    server.script = [Answer(200)]
    a, b, c = pages(server, 3)
    outcome = send(server, [b, a, b, c, a, c, b])
    assert server.received[0].json["urlList"] == [b, a, c]
    assert outcome.submitted == 3


def test_submit_mixes_http_and_https_of_the_host(server: IndexNowServer) -> None:
    server.script = [Answer(200)]
    urls = [server.url("/a"), "https://127.0.0.1/b", "http://127.0.0.1/c"]
    assert send(server, urls).ok
    assert server.received[0].json["urlList"] == urls


@pytest.mark.parametrize(
    ("status", "meaning"),
    [
        (400, "400 Bad Request: invalid format"),
        (403, "403 Forbidden: key not valid (key file not found, or the key is not in it)"),
        (
            422,
            "422 Unprocessable Entity: URLs that don't belong to the host, "
            "or a key not matching the protocol's schema",
        ),
    ],
)
def test_submit_refused_stops(server: IndexNowServer, status: int, meaning: str) -> None:
    server.script = [Answer(status)]
    clock = Clock()
    outcome = send(server, pages(server, 7), batch=3, sleep=clock)

    assert len(server.received) == 1  # not retried, later batches not sent
    assert clock.waits == []
    assert not outcome.ok
    assert outcome.submitted == 0
    phrase = meaning.partition(":")[0]
    assert outcome.batches == [
        BatchResult(status, 3, 1, meaning),
        BatchResult(
            None,
            3,
            0,
            f"not sent: an earlier batch was refused ({phrase}), and this one would be too",
        ),
        BatchResult(
            None,
            1,
            0,
            f"not sent: an earlier batch was refused ({phrase}), and this one would be too",
        ),
    ]
    assert outcome.message == (
        f"IndexNow: batch 1 of 3 (3 URLs) failed at {server.url('/indexnow')}: {meaning}; "
        "2 later batches (4 URLs) not sent, since they would be refused the same way"
    )


def test_submit_refused_after_a_submitted_batch(server: IndexNowServer) -> None:
    body = b'{"code": "UserForbiddedToAccessSite",\n "message": "key not found"}'
    server.script = [Answer(200), Answer(403, body, {"Content-Type": "application/json"})]
    outcome = send(server, pages(server, 7), batch=3)

    assert len(server.received) == 2
    assert outcome.submitted == 3
    assert [(b.status, b.urls, b.attempts) for b in outcome.batches] == [
        (200, 3, 1),
        (403, 3, 1),
        (None, 1, 0),
    ]
    assert outcome.batches[1].meaning == (
        "403 Forbidden: key not valid (key file not found, or the key is not in it); "
        """the endpoint said: '{"code": "UserForbiddedToAccessSite", "message": "key not found"}'"""
    )
    assert outcome.message.startswith(
        f"IndexNow: batch 2 of 3 (3 URLs) failed at {server.url('/indexnow')}: 403 Forbidden"
    )
    assert outcome.message.endswith(
        "; 3 URLs of 7 submitted before; 1 later batch (1 URL) not sent, "
        "since they would be refused the same way"
    )


def test_submit_single_batch_refused(server: IndexNowServer) -> None:
    server.script = [Answer(422)]
    outcome = send(server, pages(server, 2))
    assert outcome.message == (
        f"IndexNow: failed at {server.url('/indexnow')}: 422 Unprocessable Entity: URLs that "
        "don't belong to the host, or a key not matching the protocol's schema"
    )
    assert len(outcome.batches) == 1


def test_submit_other_client_errors_stop(server: IndexNowServer) -> None:
    server.script = [Answer(404, b"no such endpoint")]
    outcome = send(server, pages(server, 4), batch=2)
    assert len(server.received) == 1
    assert outcome.batches[0] == BatchResult(
        404,
        2,
        1,
        "404 Not Found: not an answer IndexNow defines; the endpoint said: 'no such endpoint'",
    )
    assert outcome.batches[1].attempts == 0


def test_submit_redirect_is_not_followed(server: IndexNowServer) -> None:
    server.script = [Answer(307, headers={"Location": server.url("/elsewhere")})]
    outcome = send(server, pages(server, 2))
    assert [post.path for post in server.received] == ["/indexnow"]
    assert not outcome.ok
    assert outcome.batches[0].status == 307
    assert outcome.batches[0].meaning == (
        f"307 Temporary Redirect: a redirect, not followed (to {server.url('/elsewhere')})"
    )


def test_submit_429_then_200_retries_once(server: IndexNowServer) -> None:
    server.script = [Answer(429), Answer(200)]
    clock = Clock()
    urls = pages(server, 2)
    outcome = send(server, urls, sleep=clock, backoff=1.5)

    assert [post.json for post in server.received] == [server.received[0].json] * 2
    assert server.received[0].json["urlList"] == urls
    assert clock.waits == [1.5]
    assert outcome.ok
    assert outcome.submitted == 2
    assert outcome.batches == [
        BatchResult(200, 2, 2, "200 OK: URLs submitted (after 1 retry: 429 Too Many Requests)")
    ]


def test_submit_server_errors_back_off_then_fail(server: IndexNowServer) -> None:
    server.script = [Answer(500)] * 4
    clock = Clock()
    outcome = send(server, pages(server, 5), batch=2, retries=3, backoff=0.5, sleep=clock)

    assert len(server.received) == 4  # 1 attempt + 3 retries, of the first batch
    assert {tuple(post.json["urlList"]) for post in server.received} == {tuple(pages(server, 2))}
    assert clock.waits == [0.5, 1.0, 2.0]
    assert not outcome.ok
    assert outcome.submitted == 0
    retried = (
        "500 Internal Server Error: server error (after 3 retries: 500 Internal Server Error, "
        "500 Internal Server Error, 500 Internal Server Error)"
    )
    assert outcome.batches == [
        BatchResult(500, 2, 4, retried),
        BatchResult(None, 2, 0, "not sent: the endpoint kept failing"),
        BatchResult(None, 1, 0, "not sent: the endpoint kept failing"),
    ]
    assert outcome.message == (
        f"IndexNow: batch 1 of 3 (2 URLs) failed at {server.url('/indexnow')}: {retried}; "
        "2 later batches (3 URLs) not sent"
    )


def test_submit_default_backoff_doubles(server: IndexNowServer) -> None:
    server.script = [Answer(502), Answer(503), Answer(504), Answer(200)]
    clock = Clock()
    outcome = send(server, pages(server, 1), sleep=clock)
    assert clock.waits == [1.0, 2.0, 4.0]
    assert outcome.ok
    assert outcome.batches[0].attempts == 4
    assert outcome.batches[0].meaning == (
        "200 OK: URLs submitted (after 3 retries: 502 Bad Gateway, 503 Service Unavailable, "
        "504 Gateway Timeout)"
    )


def test_submit_no_retries(server: IndexNowServer) -> None:
    server.script = [Answer(503)]
    clock = Clock()
    outcome = send(server, pages(server, 1), retries=0, sleep=clock)
    assert len(server.received) == 1
    assert clock.waits == []
    assert outcome.batches == [BatchResult(503, 1, 1, "503 Service Unavailable: server error")]


def test_submit_429_exhausted(server: IndexNowServer) -> None:
    server.script = [Answer(429)] * 3
    outcome = send(server, pages(server, 4), batch=2, retries=2)
    assert len(server.received) == 3
    assert outcome.batches[1] == BatchResult(
        None, 2, 0, "not sent: the endpoint asked to slow down (429 Too Many Requests)"
    )


def test_submit_honours_retry_after(server: IndexNowServer) -> None:
    server.script = [
        Answer(429, headers={"Retry-After": "7"}),
        Answer(503, headers={"Retry-After": "3600"}),  # capped
        Answer(503, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}),  # not read
        Answer(200),
    ]
    clock = Clock()
    outcome = send(server, pages(server, 1), sleep=clock, backoff=1.0)
    assert MAX_DELAY == 60
    assert clock.waits == [7.0, 60.0, 4.0]
    assert outcome.ok
    assert outcome.batches[0].attempts == 4


def test_submit_retries_a_refused_connection_then_fails() -> None:
    port = closed_port()
    clock = Clock()
    outcome = submit(
        [f"http://127.0.0.1:{port}/a"],
        host="127.0.0.1",
        key=KEY,
        key_location=f"http://127.0.0.1:{port}/{KEY}.txt",
        endpoint=f"http://127.0.0.1:{port}/indexnow",
        retries=2,
        timeout=5,
        sleep=clock,
    )
    assert clock.waits == [1.0, 2.0]
    assert not outcome.ok
    [result] = outcome.batches
    assert result.status is None
    assert result.attempts == 3
    assert result.meaning.startswith("no answer (")
    assert "refused" in result.meaning.lower()
    assert outcome.message.startswith(f"IndexNow: failed at http://127.0.0.1:{port}/indexnow: ")


def test_submit_retries_after_a_time_out(server: IndexNowServer) -> None:
    server.script = [Answer(200, delay=2), Answer(200)]
    clock = Clock()
    outcome = send(server, pages(server, 2), timeout=0.3, retries=1, sleep=clock)
    assert len(server.received) == 2
    assert clock.waits == [1.0]
    assert outcome.ok
    assert outcome.batches == [
        BatchResult(200, 2, 2, "200 OK: URLs submitted (after 1 retry: no answer (timed out))")
    ]


def test_submit_empty_sends_nothing(local_only: list[tuple[str, Any]]) -> None:
    clock = Clock()
    empties: list[Sequence[str]] = [[], ()]
    for urls in empties:
        outcome = submit(
            urls,
            host="example.com",
            key=KEY,
            key_location=f"https://example.com/{KEY}.txt",
            endpoint=DEFAULT_ENDPOINT,
            sleep=clock,
        )
        assert outcome == Outcome(0, [], True, "IndexNow: nothing to submit (no URLs)")
        assert outcome.to_json() == {
            "ok": True,
            "submitted": 0,
            "message": "IndexNow: nothing to submit (no URLs)",
            "batches": [],
        }
    assert clock.waits == []
    assert local_only == []  # not even a DNS lookup


@pytest.mark.parametrize(
    ("urls", "options", "words"),
    [
        (["http://127.0.0.2/a"], {}, "is not on 127.0.0.1"),
        (["https://example.com/a"], {}, "is not on 127.0.0.1"),
        (["/relative"], {}, "is not on 127.0.0.1"),
        (["ftp://127.0.0.1/a"], {}, "is not on 127.0.0.1"),
        (["http://127.0.0.1:1/a"], {"host": "127.0.0.1:2"}, "is not on 127.0.0.1:2"),
        (["http://127.0.0.1/a"], {"host": "127.0.0.1:8080"}, "is not on 127.0.0.1:8080"),
        (["http://127.0.0.1/a"], {"key": "bad_key!"}, "not an IndexNow key"),
        (["http://127.0.0.1/a"], {"batch": 0}, "batch must be 1 to 10,000"),
        (["http://127.0.0.1/a"], {"batch": MAX_BATCH + 1}, "batch must be 1 to 10,000"),
        (["http://127.0.0.1/a"], {"retries": -1}, "must not be negative"),
        (["http://127.0.0.1/a"], {"endpoint": "api.indexnow.org"}, "not an http"),
        (["http://127.0.0.1/a"], {"host": "http://127.0.0.1/"}, "not a host name"),
        (
            ["http://127.0.0.1/a"],
            {"key_location": f"https://example.com/{KEY}.txt"},
            "key location .* is not on 127.0.0.1",
        ),
        (
            ["http://127.0.0.1/catalog/a", "http://127.0.0.1/help/b"],
            {"key_location": f"http://127.0.0.1/catalog/{KEY}.txt"},
            "help/b is not under /catalog/, the directory of the key file",
        ),
    ],
)
def test_submit_usage_errors_send_nothing(
    server: IndexNowServer, urls: list[str], options: dict[str, Any], words: str
) -> None:
    server.script = [Answer(200)]
    # Good URLs first: a bad one anywhere stops everything.
    good = pages(server, 3) if "key_location" not in options else []
    with pytest.raises(ValueError, match=words):
        send(server, good + urls, **options)
    assert server.received == []


def test_submit_host_is_compared_case_insensitively(server: IndexNowServer) -> None:
    server.script = [Answer(200)]
    url = f"http://LOCALHOST:{server.port}/a"
    outcome = send(
        server,
        [url],
        host="localhost",
        key_location=f"http://localhost:{server.port}/{KEY}.txt",
        endpoint=server.url("/indexnow"),
    )
    assert outcome.ok
    assert server.received[0].json["host"] == "localhost"


def test_submit_key_directory_scope(server: IndexNowServer) -> None:
    server.script = [Answer(200)]
    urls = [server.url("/catalog/a"), server.url("/catalog/sub/b")]
    outcome = send(server, urls, key_location=server.url(f"/catalog/{KEY}.txt"))
    assert outcome.ok
    assert server.received[0].json["keyLocation"] == server.url(f"/catalog/{KEY}.txt")


def test_outcome_to_json(server: IndexNowServer) -> None:
    server.script = [Answer(200), Answer(403)]
    outcome = send(server, pages(server, 5), batch=2)
    data = json.loads(json.dumps(outcome.to_json()))
    assert data == {
        "ok": False,
        "submitted": 2,
        "message": outcome.message,
        "batches": [
            {"status": 200, "urls": 2, "attempts": 1, "meaning": "200 OK: URLs submitted"},
            {
                "status": 403,
                "urls": 2,
                "attempts": 1,
                "meaning": "403 Forbidden: key not valid (key file not found, or the key is "
                "not in it)",
            },
            {
                "status": None,
                "urls": 1,
                "attempts": 0,
                "meaning": "not sent: an earlier batch was refused (403 Forbidden), and this "
                "one would be too",
            },
        ],
    }


def test_outcome_is_frozen() -> None:
    outcome = Outcome(0, [], True, "x")
    with pytest.raises(AttributeError):
        outcome.ok = False  # type: ignore[misc]


# -- the default endpoint and proxies ---------------------------------------------------


def test_the_default_endpoint_is_a_constant_never_a_default() -> None:
    assert DEFAULT_ENDPOINT == "https://api.indexnow.org/indexnow"
    # submit() has no default endpoint: a caller (or a test) names it every time.
    parameter = inspect.signature(submit).parameters["endpoint"]
    assert parameter.default is inspect.Parameter.empty
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY


def test_loopback_ignores_the_environment_proxies(
    server: IndexNowServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    dead = f"http://127.0.0.1:{closed_port()}"
    for name in ("http_proxy", "https_proxy", "HTTP_PROXY", "all_proxy"):
        monkeypatch.setenv(name, dead)
    server.script = [Answer(200)]
    server.files[f"/{KEY}.txt"] = Answer(200, KEY.encode())
    assert check_key(server.url(f"/{KEY}.txt"), KEY, timeout=5) is None
    assert send(server, pages(server, 1), retries=0).ok
    assert [post.path for post in server.received] == ["/indexnow"]


def test_other_hosts_go_through_the_environment_proxy(
    server: IndexNowServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A host that is not loopback is asked for through ``http_proxy`` (here the test
    server, acting as the proxy), and never looked up by this process."""
    monkeypatch.setenv("http_proxy", server.base)
    server.script = [Answer(202)]
    server.files[f"http://indexnow.invalid/{KEY}.txt"] = Answer(200, KEY.encode() + b"\n")
    assert check_key(f"http://indexnow.invalid/{KEY}.txt", KEY, timeout=5) is None
    outcome = submit(
        ["http://indexnow.invalid/a"],
        host="indexnow.invalid",
        key=KEY,
        key_location=f"http://indexnow.invalid/{KEY}.txt",
        endpoint="http://indexnow.invalid/indexnow",
        timeout=5,
        sleep=Clock(),
    )
    assert outcome.ok
    [post] = server.received
    assert post.path == "http://indexnow.invalid/indexnow"
    assert post.json["urlList"] == ["http://indexnow.invalid/a"]


def test_loopback_detection() -> None:
    assert indexnow._loopback("http://127.0.0.1:8080/x")
    assert indexnow._loopback("http://127.5.5.5/x")
    assert indexnow._loopback("http://[::1]:8080/x")
    assert indexnow._loopback("http://localhost/x")
    assert not indexnow._loopback(DEFAULT_ENDPOINT)
    assert not indexnow._loopback("http://10.0.0.1/x")
