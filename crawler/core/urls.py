"""THE URL normalisation of the project, and the dedup key built on it.

Every URL the crawler follows, records or publishes goes through :func:`normalize_url`
once, so there is one answer to "which URL is this?". The rules are RFC 3986's
syntax-based normalisation (6.2.2) and the URL standard where browsers differ from it,
plus parameter stripping the user can switch off; nothing else is changed (Scrapy's
maintainers prefer duplicate requests to merging URLs a server may tell apart).

:func:`normalize_url` takes an *absolute* URL (already joined with its base) and returns
a pure-ASCII URI, or ``None`` when it cannot be parsed or must not be crawled:

1.  Leading and trailing C0 controls and spaces are stripped, ASCII tabs and newlines
    removed (the URL standard); a lone surrogate becomes U+FFFD.
2.  Only ``http`` and ``https``, followed by ``//`` and a non-empty host.
3.  ``\\`` before the query is read as ``/``, as the URL standard and Scrapy's
    ``safe_url_string`` do for http(s); in the query it is percent-encoded.
4.  A URL with userinfo (``user:pass@``, even empty) gives ``None``: a crawler must
    not publish credentials.
5.  The scheme and host are lowercased. A non-ASCII (or percent-encoded) host is
    mapped with UTS #46 (non-transitional, as browsers do) and converted to punycode
    (``idna``, IDNA 2008; the stdlib's IDNA 2003 codec without it). A host that cannot
    be encoded, or whose ASCII form is not dot-separated labels of 1-63 characters of
    ``[a-z0-9_-]`` (253 at most) gives ``None``. A trailing dot is kept (another
    origin). IPv6 literals must be valid (no zone id, no IPvFuture); only lowercased.
6.  The port must be decimal and at most 65535; it is written without leading zeros,
    and a default (http 80, https 443) or empty port is removed.
7.  Percent-encoding in the path and query: hex digits uppercased; an encoded
    unreserved character (``A-Z a-z 0-9 - . _ ~``) decoded; an encoded reserved one
    kept (``%2F`` is not ``/``); a ``%`` without two hex digits becomes ``%25``; every
    character not allowed in the component (controls, space, ``"<>`{}|\\^[]``,
    non-ASCII) encoded, and nothing else (``'!$+:@`` stay). Non-ASCII is UTF-8 in the
    path and the page's ``encoding`` in the query, as browsers do (a character it
    cannot represent becomes ``&#NNNN;``, encoded; an unknown or ASCII-incompatible
    encoding falls back to UTF-8).
8.  With ``strip_params`` (the default), session-identifier matrix parameters
    (``;jsessionid=...``, any spelling :func:`is_session_param` knows) on the last
    path segment are removed.
9.  Dot segments are removed (RFC 3986 5.2.4; ``..`` above the root stays at the
    root); duplicate slashes are kept. An empty path becomes ``/``.
10. The fragment is dropped: it never reaches the server.
11. The query keeps its order and blank values. With ``strip_params``, a parameter
    whose name (case-insensitively) is in :data:`TRACKING_PARAMS`, starts with
    ``utm_``, is a session identifier (:func:`is_session_param`) or is in
    ``extra_strip`` is removed. An empty query loses its ``?``.

Nothing else is touched (no trailing-slash change, no path lowercasing, no
``index.html`` or ``www.`` removal, no query sorting), and the function is idempotent.
The dedup key (:func:`url_key`) is a second form, compared and never published.
"""

from __future__ import annotations

import codecs
import functools
import ipaddress
import re
import string
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final
from urllib.parse import unquote_to_bytes

from w3lib.url import canonicalize_url

try:
    import idna as _idna
except ImportError:  # pragma: no cover - Scrapy needs tldextract, which needs idna
    _idna = None  # type: ignore[assignment]  # the module, or None without it (tested)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from scrapy.settings import BaseSettings

__all__ = [
    "SESSION_PARAMS",
    "Stripping",
    "TRACKING_PARAMS",
    "host_port",
    "is_session_param",
    "normalize_url",
    "url_key",
]

TRACKING_PARAMS: Final[frozenset[str]] = frozenset(
    {"gclid", "fbclid", "jsessionid", "phpsessid", "sid"}
)
"""Query parameters removed by default (lowercase; matched case-insensitively), besides
``utm_*`` and session identifiers in any spelling (:func:`is_session_param`)."""

SESSION_PARAMS: Final[frozenset[str]] = frozenset(
    {
        "sid",
        "sessid",
        "sessionid",
        "jsessionid",
        "phpsessid",
        "cfid",  # ColdFusion's session pair
        "cftoken",
        "zenid",  # Zen Cart
        "oscsid",  # osCommerce
    }
)
"""Session-identifier parameter names, lowercase, without ``_`` and ``-``
(``Session-ID`` is ``sessionid``); ASP's ``ASPSESSIONID`` is a prefix (IIS appends
letters). A session identifier names the visitor, never the page."""


@dataclass(frozen=True, slots=True)
class Stripping:
    """The query parameters a crawl's URLs drop: the tracking and session ones
    (``SITEMAP_STRIP_PARAMS``) and the site's own (``SITEMAP_STRIP_EXTRA``)."""

    params: bool
    extra: tuple[str, ...]

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> Stripping:
        return cls(
            settings.getbool("SITEMAP_STRIP_PARAMS"), tuple(settings.getlist("SITEMAP_STRIP_EXTRA"))
        )

    def normalize(self, url: str, encoding: str = "utf-8") -> str | None:
        """:func:`normalize_url` of *url*, stripping these parameters."""
        return normalize_url(
            url, strip_params=self.params, extra_strip=self.extra, encoding=encoding
        )


_ASP_SESSION_PREFIX: Final = "aspsessionid"
_SESSION_SPELLING: Final = str.maketrans("", "", "_-")


def is_session_param(name: str) -> bool:
    """Whether the query or matrix parameter *name* is a session identifier, in any
    spelling (see :data:`SESSION_PARAMS`); *name* as it appears in a URL (an encoded
    name is not decoded)."""
    folded = name.lower().translate(_SESSION_SPELLING)
    return folded in SESSION_PARAMS or folded.startswith(_ASP_SESSION_PREFIX)


_TRACKING_PREFIX: Final = "utm_"
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}

# RFC 3986 section 2.3 and 2.2.
_UNRESERVED: Final = frozenset(string.ascii_letters + string.digits + "-._~")
_SUB_DELIMS: Final = "!$&'()*+,;="
# path = *( "/" / pchar ), pchar = unreserved / pct-encoded / sub-delims / ":" / "@"
_PATH_SAFE: Final = string.ascii_letters + string.digits + "-._~" + _SUB_DELIMS + ":@/"
# query = *( pchar / "/" / "?" )
_QUERY_SAFE: Final = _PATH_SAFE + "?"

# URL standard: "remove any leading and trailing C0 control or space" (urlsplit strips
# them too), then "remove all ASCII tab or newline".
C0_CONTROL_OR_SPACE: Final = "".join(map(chr, range(0x21)))
_TAB_OR_NEWLINE: Final = str.maketrans("", "", "\t\n\r")
_SURROGATE_RE: Final = re.compile("[\ud800-\udfff]")
_SCHEME_RE: Final = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")
_PORT_RE: Final = re.compile(r"[0-9]*")
# DNS: labels of 1 to 63 characters; "_" is not a hostname character but real
# sites use it (and DNS allows it), so it is accepted. A trailing dot is kept.
_HOST_RE: Final = re.compile(r"(?=.{1,253}\.?\Z)[a-z0-9_-]{1,63}(?:\.[a-z0-9_-]{1,63})*\.?")


def _component_re(safe: str) -> re.Pattern[str]:
    """Match what must change in a component: escapes, lone ``%``, unsafe characters."""
    unsafe_ascii = "".join(chr(c) for c in range(0x80) if chr(c) not in safe)
    return re.compile(r"(%[0-9A-Fa-f]{2})|(%)|([" + re.escape(unsafe_ascii) + r"])|([^\x00-\x7f]+)")


_PATH_RE: Final = _component_re(_PATH_SAFE)
_QUERY_RE: Final = _component_re(_QUERY_SAFE)


def normalize_url(
    url: str, *, strip_params: bool = True, extra_strip: Iterable[str] = (), encoding: str = "utf-8"
) -> str | None:
    """The normalised form of the absolute URL *url*, or ``None`` (the module's
    rules); *encoding* is the page's, for non-ASCII in the query."""
    parts = _split(url)
    if parts is None:
        return None
    scheme, authority, path, query = parts
    parsed = _parse_authority(scheme, authority)
    if parsed is None or parsed[0]:  # parsed[0]: userinfo present
        return None
    _, host, port = parsed

    netloc = host if port == _DEFAULT_PORTS[scheme] else f"{host}:{port}"

    path = _normalise_component(path, _PATH_RE, "utf-8")
    if strip_params:
        path = _strip_path_session(path)
    # After percent normalisation (so "%2E" counts as "."), as RFC 3986 6.2.2
    # orders it, and after the jsessionid removal, which can turn "..;jsessionid=x"
    # into ".." (the other order would not be idempotent).
    path = _remove_dot_segments(path) or "/"

    if query:
        query = _normalise_component(query, _QUERY_RE, _query_encoding(encoding))
        if strip_params:
            query = _strip_query(query, extra_strip, encoding)

    return f"{scheme}://{netloc}{path}?{query}" if query else f"{scheme}://{netloc}{path}"


@functools.lru_cache(maxsize=1 << 16)
def url_key(normalized_url: str) -> str:
    """The dedup key of a URL :func:`normalize_url` returned: w3lib's
    ``canonicalize_url``, as Scrapy's fingerprints (the query sorted and read as form
    data: ``?q=a+b`` is ``?q=a%20b``, ``?a`` is ``?a=``). For comparisons only.
    Cached: most links repeat on every page of a site."""
    return canonicalize_url(normalized_url, keep_fragments=False)


def host_port(url: str) -> tuple[str, int] | None:
    """``(host, port)`` of an absolute http(s) URL, or ``None``: the host as
    :func:`normalize_url` writes it (IPv6 without brackets), the effective port."""
    found = origin_of(url)
    return None if found is None else found[1:]


@functools.lru_cache(maxsize=1 << 14)
def origin_of(url: str) -> tuple[str, str, int] | None:
    """The origin of an absolute http(s) URL: ``(scheme, host, port)``, the port
    effective (RFC 6454: http and https of one host are two origins), the host as
    :func:`normalize_url` writes it (IPv6 without brackets), or None. Cached: the
    judge, the rules and the middlewares ask it of one URL in turn (site_of)."""
    parts = _split(url)
    parsed = None if parts is None else _parse_authority(parts[0], parts[1])
    if parts is None or parsed is None:
        return None
    return parts[0], parsed[1].removeprefix("[").removesuffix("]"), parsed[2]


def _split(url: str) -> tuple[str, str, str, str] | None:
    """Split an http(s) URL into scheme, authority, path and query (fragment dropped)."""
    url = url.strip(C0_CONTROL_OR_SPACE).translate(_TAB_OR_NEWLINE)
    url = _SURROGATE_RE.sub("\ufffd", url)
    match = _SCHEME_RE.match(url)
    if match is None:
        return None
    scheme = match.group(1).lower()
    if scheme not in _DEFAULT_PORTS:
        return None
    rest = url[match.end() :].partition("#")[0]
    hier, _, query = rest.partition("?")
    hier = hier.replace("\\", "/")
    if not hier.startswith("//"):
        # "http:example.com" or "http:/example.com": the caller did not join
        # the URL with its base; guessing the host here would be wrong.
        return None
    authority, slash, path = hier[2:].partition("/")
    return scheme, authority, slash + path, query


def _parse_authority(scheme: str, authority: str) -> tuple[bool, str, int] | None:
    """Return (has userinfo, normalised host, effective port), or None if invalid."""
    userinfo, at, hostport = authority.rpartition("@")
    if hostport.startswith("["):
        literal, bracket, port = hostport[1:].partition("]")
        host = _normalise_ipv6(literal) if bracket else None
        if port and not port.startswith(":"):
            return None
        port = port[1:]
    else:
        raw_host, _, port = hostport.partition(":")
        host = _normalise_host(raw_host)
    if host is None or not _PORT_RE.fullmatch(port):
        return None
    digits = port.lstrip("0")
    # The length check first: int() refuses strings of more than 4300 digits.
    if len(digits) > 5 or (digits and int(digits) > 65535):
        return None
    number = int(digits or "0") if port else _DEFAULT_PORTS[scheme]
    return bool(at), host, number


def _normalise_ipv6(literal: str) -> str | None:
    """Return ``[literal]`` lowercased if it is a plain IPv6 address, else None."""
    # A zone id ("%25eth0") only means something on the crawling machine, and
    # IPvFuture ("v1.x") is not something we can connect to.
    if "%" in literal:
        return None
    try:
        ipaddress.IPv6Address(literal)
    except ValueError:
        return None
    return f"[{literal.lower()}]"


def _normalise_host(host: str) -> str | None:
    """Return the lowercased ASCII (punycode) form of a registered name or IPv4 address."""
    if "%" in host:
        # The URL standard percent-decodes the host (as UTF-8) before IDNA.
        try:
            host = unquote_to_bytes(host).decode("utf-8")
        except UnicodeDecodeError:
            return None
    ascii_host = host if host.isascii() else _to_ascii(host)
    if ascii_host is None:
        return None
    host = ascii_host.lower()
    return host if _HOST_RE.fullmatch(host) else None


def _to_ascii(host: str) -> str | None:
    """IDNA-encode a non-ASCII host; None if it cannot be encoded."""
    try:
        if _idna is None:
            return host.encode("idna").decode("ascii")
        # UTS #46 mapping first (case folding, full-width dots, NFC), as
        # browsers do; std3_rules=False keeps "_" labels. Then each non-ASCII
        # label is converted on its own, so an ASCII label that IDNA 2008
        # would reject ("a_b") does not sink the whole host.
        mapped = _idna.uts46_remap(host, std3_rules=False, transitional=False)
        return ".".join(
            label if label.isascii() else _idna.alabel(label).decode("ascii")
            for label in mapped.split(".")
        )
    except UnicodeError:  # idna.IDNAError is a UnicodeError
        return None


@functools.lru_cache(maxsize=64)
def _query_encoding(encoding: str) -> str:
    """Return the codec used for non-ASCII query characters of a page in *encoding*."""
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return "utf-8"
    # ASCII characters are never passed through the page encoding (they are
    # kept or escaped as ASCII), which is only correct for ASCII-compatible
    # encodings; for the others, browsers use UTF-8 (URL standard, "encoding"
    # of a URL for UTF-16 documents).
    probe = string.printable
    try:
        compatible = probe.encode(name) == probe.encode("ascii")
    except UnicodeError:
        compatible = False
    return name if compatible else "utf-8"


def _normalise_component(text: str, pattern: re.Pattern[str], encoding: str) -> str:
    """Apply the percent-encoding rules (7 in the module docstring) to a path or query."""

    def replace(match: re.Match[str]) -> str:
        escape, lone_percent, unsafe_ascii, non_ascii = match.groups()
        if escape is not None:
            char = chr(int(escape[1:], 16))
            return char if char in _UNRESERVED else escape.upper()
        if lone_percent is not None:
            return "%25"
        if unsafe_ascii is not None:
            return f"%{ord(unsafe_ascii):02X}"
        # A non-ASCII run is encoded as a whole (stateful encodings such as
        # ISO-2022-JP need that). Bytes that happen to be unreserved ASCII (the
        # digits of "&#8364;", the trail byte of some Shift_JIS characters)
        # stay literal: encoding them would not survive a second pass.
        data = non_ascii.encode(encoding, errors="xmlcharrefreplace")
        return "".join(chr(b) if chr(b) in _UNRESERVED else f"%{b:02X}" for b in data)

    return pattern.sub(replace, text)


def _strip_path_session(path: str) -> str:
    """Remove ``;jsessionid=...`` (any session spelling) matrix parameters from the
    last path segment."""
    head, slash, last = path.rpartition("/")
    if ";" not in last:
        return path
    segment, *params = last.split(";")
    kept = [p for p in params if not is_session_param(p.partition("=")[0])]
    return head + slash + ";".join([segment, *kept])


def _strip_query(query: str, extra_strip: Iterable[str], encoding: str) -> str:
    """Remove tracking parameters (and *extra_strip*) from a normalised query."""
    if isinstance(extra_strip, str):  # a single name, not its characters
        extra_strip = (extra_strip,)
    # Compare with the names as they appear in a normalised query ("ü" is
    # "%C3%BC" there).
    extra = {
        _normalise_component(name, _QUERY_RE, _query_encoding(encoding)).lower()
        for name in extra_strip
    }

    def removed(pair: str) -> bool:
        name = pair.partition("=")[0].lower()
        return (
            name in TRACKING_PARAMS
            or name.startswith(_TRACKING_PREFIX)
            or is_session_param(name)
            or name in extra
        )

    return "&".join(pair for pair in query.split("&") if not removed(pair))


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, ``remove_dot_segments``, for a path that starts with
    ``/`` (or is empty): a segment at a time."""
    if "." not in path:
        return path
    segments = path.split("/")[1:]
    output: list[str] = []
    for segment in segments:
        if segment == "..":
            if output:
                output.pop()
        elif segment != ".":
            output.append(segment)
    if segments[-1] in (".", ".."):
        output.append("")  # "/a/." is "/a/"
    return "/" + "/".join(output)


def site_of(url: str) -> tuple[str, int | None] | None:
    """The site a URL belongs to for discovery: its host, and its port when not the
    scheme's default (http and https of one host are one site; another port or host
    name, subdomains included, is another)."""
    found = origin_of(url)
    if found is None:
        return None
    scheme, host, port = found
    return host, None if port == _DEFAULT_PORTS[scheme] else port


class StartUrlError(ValueError):
    """The start URL cannot be crawled."""


def start_url(url: str | None) -> str:
    """The normalised start URL of a crawl, or StartUrlError saying why *url* is none
    (every spider takes ``url`` as its argument: ``scrapy crawl site -a url=...``)."""
    if not url:
        raise StartUrlError("a start URL is required (-a url=https://example.com/)")
    start = normalize_url(url)
    if start is None or site_of(start) is None:
        raise StartUrlError(not_a_start_url(url))
    return start


#: A scheme before the colon (``ftp:``, ``mailto:``, ``http:/x``), not a host and its
#: port (``localhost:8000``).
_SCHEME_GIVEN_RE = re.compile(r"[a-z][a-z0-9+.-]*:(?![0-9]+(?:[/?#]|$))", re.IGNORECASE)


def bare_host(text: object) -> str | None:
    """*text* when it is a host (and maybe a port and path) without its scheme
    (``example.com``, ``www.example.com/docs/``, ``127.0.0.1:8095/``), stripped; else None.
    A single word without a port (``example``) is more likely a mistake than a host."""
    if not isinstance(text, str):
        return None
    bare = text.strip()
    if bare.startswith("//"):
        bare = bare[2:]
    if not bare or _SCHEME_GIVEN_RE.match(bare) or "://" in bare:
        return None
    found = host_port(normalize_url("http://" + bare) or "")
    if found is None:
        return None
    host, _ = found
    one_word = "." not in host and ":" not in host and host != "localhost"
    if one_word and not re.search(r":[0-9]+(?:[/?#]|$)", bare):
        return None
    return bare


def not_a_start_url(text: object) -> str:
    """The one-line error for a start URL that is not an http(s) URL; when *text* is
    a host without its scheme (``www.example.com``, ``127.0.0.1:8095/``), the two
    URLs it may have meant, the likelier first (https for a public name)."""
    message = f"not an http(s) URL: {text!r}"
    bare = bare_host(text)
    found = host_port(normalize_url("http://" + bare) or "") if bare else None
    if bare is None or found is None:
        return message
    schemes = ("https", "http") if is_public_host(found[0]) else ("http", "https")
    return f"{message}; did you mean {schemes[0]}://{bare} or {schemes[1]}://{bare}?"


def other_forms(site: tuple[str, int | None] | None) -> frozenset[tuple[str, int | None]]:
    """The sites that are another form of *site* as people link to it: its host with
    ``www.`` and without (``example.com`` and ``www.example.com``), on the same port.
    A crawl follows their links as the redirects they usually are, and lists nothing
    of theirs (docs/crawling.md, "The start URL"). None for an address or a one-word
    host (``localhost``)."""
    if site is None or "." not in site[0]:
        return frozenset()
    host, port = site
    try:
        ipaddress.ip_address(host.strip("[]"))
        return frozenset()
    except ValueError:
        pass
    other = host[4:] if host.startswith("www.") else "www." + host
    return frozenset({(other, port)}) if "." in other else frozenset()


def is_public_host(host: str) -> bool:
    """False for loopback, private, link-local and reserved addresses and for
    ``localhost``; names are assumed public (they are not resolved here)."""
    if host == "localhost" or host.endswith(".localhost"):
        return False
    try:
        ip = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return True
    return ip.is_global
