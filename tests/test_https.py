"""A live domain as people type it: the start URL's redirects to the real origin,
HTTPS verified, credentials kept to the final origin (docs/crawling.md, "The start
URL" and "HTTPS").

Real servers (tests/seedserver.py) with certificates from a test CA (trustme), on
loopback addresses 127.0.0.N at the usual ports 80 and 443, so that URLs read as a
person types them (``http://example.test/``). Their host names resolve there through
the test-only ``SITEMAP_TEST_HOSTS``; the CA is trusted with ``--ca-file`` or, as a CA
installed in the system's store, through ``SSL_CERT_FILE``.
"""

from __future__ import annotations

import base64
import datetime
import gzip
import json
import os
import random
import re
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import trustme

from tests.conftest import ROOT
from tests.seedserver import ScriptedSite

USER, PASSWORD = "stage", "s3cret-Pa55"
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


@dataclass
class Domain:
    """Servers on loopback addresses of their own, 127.X.Y.N at the usual ports."""

    tmp: Path
    ca: trustme.CA
    prefix: str = ""
    sites: list[ScriptedSite] = field(default_factory=list)

    def address(self, n: int) -> str:
        return f"{self.prefix}.{n}"

    def serve(
        self, name: str, host: str, n: int, *, tls: bool = True, pem: tuple[bytes, bytes] = ()
    ) -> ScriptedSite:
        """A server for *host* on address *n*: HTTPS on 443 with a certificate of the
        test CA for *host* (or *pem*: a certificate and its key), or plain HTTP on 80."""
        chain = None
        if tls:
            chain = (self.tmp / f"{name}.crt", self.tmp / f"{name}.key")
            if not pem:
                cert = self.ca.issue_cert(host)
                pem = (cert.cert_chain_pems[0].bytes(), cert.private_key_pem.bytes())
            chain[0].write_bytes(pem[0])
            chain[1].write_bytes(pem[1])
        port = 443 if tls else 80
        site = ScriptedSite(self.tmp, name, tls=chain, host=host, bind=(self.address(n), port))
        self.sites.append(site)
        return site

    def stop(self) -> None:
        for site in self.sites:
            site.stop()


@pytest.fixture
def ca(tmp_path: Path) -> tuple[trustme.CA, Path]:
    authority = trustme.CA()
    pem = tmp_path / "ca.pem"
    authority.cert_pem.write_to_path(str(pem))
    return authority, pem


@pytest.fixture
def domain(tmp_path: Path, ca: tuple[trustme.CA, Path]) -> Iterator[Domain]:
    """Servers on a free 127.X.Y (skips the test where port 443 cannot be bound)."""
    found = Domain(tmp_path, ca[0])
    for _ in range(20):
        found.prefix = f"127.{random.randrange(1, 250)}.{random.randrange(1, 250)}"
        try:
            found.serve("probe", "probe.test", 1, tls=False).stop()
        except OSError:
            continue
        found.sites.clear()
        break
    else:
        pytest.skip("cannot listen on port 80 of a loopback address here")
    yield found
    found.stop()


def crawl(
    url: str,
    tmp_path: Path,
    hosts: dict[str, str],
    *options: str,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    out = tmp_path / "public"
    return subprocess.run(
        [sys.executable, "-m", "crawler.cli", "crawl", url, "--out", str(out)]
        + [*options, "-s", f"SITEMAP_TEST_HOSTS={json.dumps(hosts)}"]
        + ["-s", "SITEMAP_PROGRESS_INTERVAL=0", "-s", "SITEMAP_PARSE_PROCESSES=0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def published(tmp_path: Path) -> set[str]:
    """Every <loc> of the published set under tmp_path/public."""
    locs: set[str] = set()
    for path in (tmp_path / "public").glob("sitemap*.xml.gz"):
        locs |= set(re.findall(r"<loc>([^<]+)</loc>", gzip.decompress(path.read_bytes()).decode()))
    return locs


def www_site(domain: Domain) -> ScriptedSite:
    """https://www.example.test/ (address 1): three pages; links to the other forms of
    its origin (http://, the bare domain), robots.txt that keeps /private out."""
    www = domain.serve("www", "www.example.test", 1)
    www.spec["robots"] = "User-agent: *\nDisallow: /private\n"
    sts = {"headers": {"Strict-Transport-Security": "max-age=31536000"}}
    www.page("/", "/a", "http://www.example.test/b", "http://example.test/a", "/private", **sts)
    www.page("/a", "/b", "https://example.test/", **sts)
    www.page("/b", "/", "http://example.test/only", **sts)
    www.page("/only", "/", **sts)  # linked only through the bare domain
    www.page("/private")
    www.save()
    return www


def redirector(
    domain: Domain, name: str, host: str, n: int, to: str, *, tls: bool = True, status: int = 301
) -> ScriptedSite:
    """A server that answers everything with a redirect to *to* and the path."""
    site = domain.serve(name, host, n, tls=tls)
    site.spec["redirect_all"] = {"to": to, "status": status}
    site.save()
    return site


def example_test(domain: Domain) -> tuple[ScriptedSite, dict[str, str]]:
    """www.example.test on address 1 (https, and http redirecting to it); example.test
    on address 2 (http and https redirecting to https://www.example.test)."""
    www = www_site(domain)
    http = redirector(
        domain, "www-http", "www.example.test", 1, "https://www.example.test", tls=False
    )
    redirector(domain, "apex-http", "example.test", 2, "https://www.example.test", tls=False)
    redirector(domain, "apex-https", "example.test", 2, "https://www.example.test")
    www.plain = http  # type: ignore[attr-defined]
    return www, {"www.example.test": domain.address(1), "example.test": domain.address(2)}


FINAL = {f"https://www.example.test{p}" for p in ("/", "/a", "/b", "/only")}


@pytest.mark.parametrize(
    "typed",
    [
        "http://example.test/",
        "https://example.test/",
        "example.test",
        "http://www.example.test/",
        "www.example.test",
        "https://www.example.test/",
    ],
)
def test_every_form_a_person_types_publishes_the_final_origin(
    domain: Domain, ca: tuple[trustme.CA, Path], tmp_path: Path, typed: str
) -> None:
    www, hosts = example_test(domain)
    done = crawl(typed, tmp_path, hosts, "--ca-file", str(ca[1]))
    assert done.returncode == 0, done.stderr[-3000:]
    assert published(tmp_path) == FINAL
    if typed != "https://www.example.test/":
        assert "crawling https://www.example.test/" in done.stderr
    assert "Sitemap: https://www.example.test/sitemap_index.xml" in done.stderr
    paths = [r["path"] for r in www.requests()]
    assert "/private" not in paths  # robots.txt over HTTPS, obeyed
    assert paths.count("/") == 2  # asked once before the crawl, once by it
    assert paths.count("/b") == 1
    # HSTS: http://www.example.test/b, linked from a page that sent the header, is
    # taken as https:// with no request over http (only the pre-flight's, if typed so).
    plain = [r["path"] for r in www.plain.requests()]  # type: ignore[attr-defined]
    assert "/b" not in plain and plain in ([], ["/robots.txt", "/"])
    # ... answered as browsers do, 307 (the http:// server itself answers 301).
    rows = {url: (decision, reason) for url, decision, reason in ledger_rows(tmp_path)}
    assert rows["http://www.example.test/b"] == ("redirect", "307 -> https://www.example.test/b")
    # The bare domain's links: followed as the redirects they are, never listed.
    assert rows["http://example.test/a"] == ("redirect", "301 -> https://www.example.test/a")
    assert rows["http://example.test/only"][0] == "redirect"


def self_signed_pem(host: str) -> tuple[bytes, bytes]:
    """A certificate for *host* that signs itself, and its key (PEM)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=30))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    return (
        cert.public_bytes(serialization.Encoding.PEM),
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ),
    )


def self_signed(domain: Domain, host: str, n: int) -> ScriptedSite:
    """An HTTPS server for *host* whose certificate signs itself (no CA knows it);
    it records every request's headers, Authorization included."""
    site = domain.serve("self", host, n, pem=self_signed_pem(host))
    site.page("/", "/a")
    site.page("/a")
    site.save()
    return site


def test_a_self_signed_host_is_refused_and_never_gets_the_credentials(
    domain: Domain, ca: tuple[trustme.CA, Path], tmp_path: Path
) -> None:
    site = self_signed(domain, "staging.example.test", 3)
    hosts = {"staging.example.test": domain.address(3)}
    staging = ("https://staging.example.test/", tmp_path, hosts, "--auth", f"{USER}:{PASSWORD}")
    done = crawl(*staging)
    assert done.returncode == 3, done.stderr[-3000:]
    line = done.stderr.strip().splitlines()[-1]
    assert "TLS certificate refused (self-signed certificate)" in line, line
    assert "--insecure" in line
    assert "Traceback" not in done.stderr
    assert not (tmp_path / "public").exists()  # nothing published, no empty --out
    assert all("authorization" not in r["headers"] for r in site.requests())

    # --insecure crawls it, says so, and still sends no credentials ...
    done = crawl(*staging, "--insecure")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "TLS: certificates NOT verified (--insecure)" in done.stderr
    assert "credentials: not sent" in done.stderr
    assert published(tmp_path) == {
        "https://staging.example.test/",
        "https://staging.example.test/a",
    }
    assert site.requests() and all("authorization" not in r["headers"] for r in site.requests())
    report = json.loads((tmp_path / "public.sitemap-state" / "report.json").read_text())
    assert report["tls_verified"] is False
    html = (tmp_path / "public.sitemap-state" / "report.html").read_text()
    assert "TLS certificates were NOT verified (--insecure)" in html

    # ... unless --insecure-credentials.
    done = crawl(*staging, "--insecure", "--insecure-credentials")
    assert done.returncode == 0, done.stderr[-3000:]
    crawled = [r for r in site.requests() if r["headers"].get("authorization") == BASIC]
    assert crawled


def _expired(ca: trustme.CA, host: str) -> tuple[bytes, bytes]:
    now = datetime.datetime.now(datetime.UTC)
    cert = ca.issue_cert(
        host, not_before=now - datetime.timedelta(days=30), not_after=now - datetime.timedelta(1)
    )
    return cert.cert_chain_pems[0].bytes(), cert.private_key_pem.bytes()


def _for_another_name(ca: trustme.CA, host: str) -> tuple[bytes, bytes]:
    cert = ca.issue_cert("someone-else.test")
    return cert.cert_chain_pems[0].bytes(), cert.private_key_pem.bytes()


def _unknown_issuer(ca: trustme.CA, host: str) -> tuple[bytes, bytes]:
    cert = trustme.CA().issue_cert(host)  # a CA nobody trusts
    return cert.cert_chain_pems[0].bytes(), cert.private_key_pem.bytes()


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (_expired, "expired certificate"),
        (_for_another_name, "certificate for another host name"),
        (_unknown_issuer, "unknown issuer (no trusted CA signed the certificate)"),
    ],
)
def test_a_certificate_that_fails_is_one_line_naming_the_problem(
    domain: Domain,
    ca: tuple[trustme.CA, Path],
    tmp_path: Path,
    make: Callable[[trustme.CA, str], tuple[bytes, bytes]],
    problem: str,
) -> None:
    site = domain.serve("bad", "bad.example.test", 8, pem=make(ca[0], "bad.example.test"))
    site.page("/")
    site.save()
    hosts = {"bad.example.test": domain.address(8)}
    done = crawl("https://bad.example.test/", tmp_path, hosts, "--ca-file", str(ca[1]))
    assert done.returncode == 3, done.stderr[-3000:]
    assert done.stderr.count("\n") == 1, done.stderr  # one line
    assert f"TLS certificate refused ({problem}); --insecure crawls it anyway" in done.stderr
    assert site.requests() == []
    assert not (tmp_path / "public").exists() and not (tmp_path / "public.sitemap-state").exists()


def test_the_system_store_trusts_an_installed_ca(
    domain: Domain, ca: tuple[trustme.CA, Path], tmp_path: Path
) -> None:
    """A CA installed in the system's store (OpenSSL's default paths honour
    SSL_CERT_FILE) is trusted without --ca-file; without it, the same site fails."""
    www, hosts = example_test(domain)
    done = crawl("example.test", tmp_path, hosts, env={"SSL_CERT_FILE": str(ca[1])})
    assert done.returncode == 0, done.stderr[-3000:]
    assert published(tmp_path) == FINAL
    done = crawl("example.test", tmp_path / "again", hosts)
    assert done.returncode == 3
    assert "TLS certificate refused (unknown issuer" in done.stderr


def test_a_domain_that_moved_to_another_brand_is_not_followed(
    domain: Domain, ca: tuple[trustme.CA, Path], tmp_path: Path
) -> None:
    redirector(domain, "old", "old-brand.test", 4, "https://www.new-brand.test", tls=False)
    new = domain.serve("new", "www.new-brand.test", 5)
    new.page("/")
    new.save()
    hosts = {"old-brand.test": domain.address(4), "www.new-brand.test": domain.address(5)}
    done = crawl("http://old-brand.test/", tmp_path, hosts, "--ca-file", str(ca[1]))
    assert done.returncode == 3, done.stderr[-3000:]
    line = done.stderr.strip().splitlines()[-1]
    assert "redirects to https://www.new-brand.test/ (301), another site: not followed" in line
    assert "sitemap-crawler crawl https://www.new-brand.test/" in line
    # Only robots.txt, which the old domain's robots.txt redirects to (RFC 9309 2.3.1.2).
    assert [r["path"] for r in new.requests()] in ([], ["/robots.txt"])
    assert not (tmp_path / "public").exists()


def test_a_redirect_loop_is_one_line(domain: Domain, tmp_path: Path) -> None:
    redirector(domain, "a", "loop.test", 6, "http://www.loop.test", tls=False)
    redirector(domain, "b", "www.loop.test", 7, "http://loop.test", tls=False)
    hosts = {"loop.test": domain.address(6), "www.loop.test": domain.address(7)}
    done = crawl("http://loop.test/", tmp_path, hosts)
    assert done.returncode == 3, done.stderr[-3000:]
    assert "a redirect loop (http://loop.test/ -> http://www.loop.test/ -> http://loop.test/)" in (
        done.stderr
    )


def test_audit_and_processes_read_the_final_origin(
    domain: Domain, ca: tuple[trustme.CA, Path], tmp_path: Path
) -> None:
    """The same pre-flight for the audit and for a crawl over several processes."""
    www, hosts = example_test(domain)
    done = crawl(
        "http://example.test/", tmp_path, hosts, "--ca-file", str(ca[1]), "--processes", "2"
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert published(tmp_path) == FINAL
    audit = subprocess.run(
        [sys.executable, "-m", "crawler.cli", "audit", "example.test", "--ca-file", str(ca[1])]
        + ["-s", f"SITEMAP_TEST_HOSTS={json.dumps(hosts)}", "-s", "SITEMAP_PARSE_PROCESSES=0"]
        + ["-s", "SITEMAP_PROGRESS_INTERVAL=0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert audit.returncode == 0, audit.stderr[-3000:]
    assert "https://example.test/ redirects to https://www.example.test/ (301)" in audit.stdout


def test_a_night_that_finds_the_origin_moved_refuses(
    domain: Domain, ca: tuple[trustme.CA, Path], tmp_path: Path
) -> None:
    www, hosts = example_test(domain)
    done = crawl("http://example.test/", tmp_path, hosts, "--ca-file", str(ca[1]))
    assert done.returncode == 0, done.stderr[-3000:]
    index = (tmp_path / "public" / "sitemap_index.xml").read_bytes()
    # The site moves back to its bare domain: https://example.test/ now answers itself.
    named = {site.file.name: site for site in domain.sites}
    named["apex-http.json"].spec["redirect_all"]["to"] = "https://example.test"
    named["apex-http.json"].save()
    apex = named["apex-https.json"]
    apex.spec = {"pages": {}}
    apex.page("/", "/a")
    apex.page("/a")
    apex.save()
    done = crawl("http://example.test/", tmp_path, hosts, "--ca-file", str(ca[1]))
    assert done.returncode == 3, done.stderr[-3000:]
    line = done.stderr.strip().splitlines()[-1]
    assert "the site moved: the last run crawled https://www.example.test/" in line
    assert "now leads to https://example.test/" in line
    assert (tmp_path / "public" / "sitemap_index.xml").read_bytes() == index


def ledger_rows(tmp_path: Path) -> list[tuple[str, str, str]]:
    """(url, decision, reason) of every URL in the published crawl's ledger."""
    with closing(sqlite3.connect(tmp_path / "public.sitemap-state" / "ledger.sqlite")) as con:
        return con.execute("select url, decision, reason from urls").fetchall()


@pytest.mark.parametrize(
    ("start", "source", "target", "followed"),
    [
        ("http://example.com/", "http://example.com/", "https://www.example.com/", True),
        ("http://example.com/", "http://example.com/", "http://example.com/en/", True),
        (
            "https://www.example.co.uk/",
            "https://www.example.co.uk/",
            "https://example.co.uk/",
            True,
        ),
        ("http://shop.example.com/", "http://shop.example.com/", "https://example.com/", True),
        ("http://old-brand.com/", "http://old-brand.com/", "https://www.new-brand.com/", False),
        # Two sites of one public suffix (github.io) are two brands.
        ("https://a.github.io/", "https://a.github.io/", "https://b.github.io/", False),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000/", "https://127.0.0.1:8443/", True),
        ("http://127.0.0.1/", "http://127.0.0.1/", "http://127.0.0.2/", False),
        ("http://example.test/", "http://example.test/", "https://www.example.test/", True),
    ],
)
def test_which_redirects_are_the_sites_answer(
    start: str, source: str, target: str, followed: bool
) -> None:
    from crawler.fetch.origin import followed as is_followed

    assert is_followed(start, source, target) is followed


def test_other_start_urls_and_sitemaps_move_with_the_origin() -> None:
    from crawler.fetch.origin import Hop, Origin

    hops = (Hop("https://example.com/", "301"),)
    origin = Origin("example.com", "https://www.example.com/", hops, guessed=True)
    assert origin.rebase("https://example.com/docs/?a=1") == "https://www.example.com/docs/?a=1"
    assert origin.rebase("https://elsewhere.com/x") == "https://elsewhere.com/x"
    assert origin.rebase("sitemaps/local.xml") == "sitemaps/local.xml"
    assert origin.line() == (
        "example.com: https://example.com/ redirects to https://www.example.com/ (301): "
        "crawling https://www.example.com/"
    )


@pytest.mark.parametrize(
    ("header", "verified", "asked", "upgraded"),
    [
        ("max-age=31536000", True, "http://www.example.test/b", "https://www.example.test/b"),
        (
            "max-age=31536000",
            True,
            "http://www.example.test:8080/b?q",
            "https://www.example.test:8080/b?q",
        ),
        ("max-age=31536000", True, "http://cdn.www.example.test/b", None),
        (
            "max-age=600; includeSubDomains",
            True,
            "http://cdn.www.example.test/",
            "https://cdn.www.example.test/",
        ),
        ("max-age=0", True, "http://www.example.test/b", None),
        ("max-age=31536000", False, "http://www.example.test/b", None),  # --insecure: ignored
        ("includeSubDomains", True, "http://www.example.test/b", None),  # no max-age
    ],
)
def test_strict_transport_security_as_browsers_keep_it(
    header: str, verified: bool, asked: str, upgraded: str | None
) -> None:
    from scrapy import Request
    from scrapy.http import Response
    from scrapy.statscollectors import MemoryStatsCollector
    from scrapy.utils.test import get_crawler

    from crawler.fetch.hsts import StrictTransportMiddleware

    hsts = StrictTransportMiddleware(MemoryStatsCollector(get_crawler()), verified=verified)
    page = Request("https://www.example.test/")
    answer = Response(page.url, headers={"Strict-Transport-Security": header}, request=page)
    hsts.process_response(page, answer)
    got = hsts.process_request(Request(asked))
    if upgraded is None:
        assert got is None
    else:
        assert got is not None and got.status == 307
        assert got.headers[b"Location"].decode() == upgraded


def test_another_form_that_does_not_redirect_is_never_listed_nor_followed(
    domain: Domain, ca: tuple[trustme.CA, Path], tmp_path: Path
) -> None:
    """The bare domain serving pages of its own (another site, say): a link to it is
    asked, decided ``excluded``, and its links go nowhere."""
    www = domain.serve("www", "www.example.test", 1)
    www.page("/", "/a", "https://example.test/x")
    www.page("/a", "/")
    www.save()
    apex = domain.serve("apex", "example.test", 2)
    apex.page("/x", "/y", "https://www.example.test/secret")
    apex.page("/y")
    apex.save()
    hosts = {"www.example.test": domain.address(1), "example.test": domain.address(2)}
    done = crawl("https://www.example.test/", tmp_path, hosts, "--ca-file", str(ca[1]))
    assert done.returncode == 0, done.stderr[-3000:]
    assert published(tmp_path) == {"https://www.example.test/", "https://www.example.test/a"}
    rows = {url: (decision, reason) for url, decision, reason in ledger_rows(tmp_path)}
    assert rows["https://example.test/x"] == (
        "excluded",
        "another form of the site's host, answered HTTP 200: not listed",
    )
    assert "https://example.test/y" not in rows
    assert "https://www.example.test/secret" not in rows
    assert [r["path"] for r in apex.requests() if r["path"] != "/robots.txt"] == ["/x"]
