"""Validate written sitemap files against the official sitemaps.org 0.9 schemas.

The XSDs are kept in ``tests/xsd/`` (copied from the protocol's reference set, with
its README): ``sitemap-all.xsd`` loads the sitemaps.org urlset schema together with
Google's image, video and news schemas and an ``xhtml:link`` schema, so a urlset is
checked with every extension it may carry. Each is parsed once per test session, from
disk only.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from lxml import etree

XSD_DIR = Path(__file__).resolve().parent / "xsd"

# The documents under test are our own output, but parse them as untrusted:
# no entity expansion, no network.
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
# The schemas import each other by relative path; never from the network.
_SCHEMA_PARSER = etree.XMLParser(no_network=True)


@cache
def _schema(name: str) -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(XSD_DIR / name), _SCHEMA_PARSER))


def _validate(schema_name: str, data: bytes) -> None:
    if not isinstance(data, bytes):
        raise TypeError(f"validate the bytes written, not {type(data).__name__}")
    _schema(schema_name).assertValid(etree.fromstring(data, _PARSER))


def validate_urlset(data: bytes) -> None:
    """Raise ``lxml.etree.DocumentInvalid`` unless ``data`` is a valid ``<urlset>``
    (with or without image, video, news and hreflang extensions)."""
    _validate("sitemap-all.xsd", data)


def validate_index(data: bytes) -> None:
    """Raise ``lxml.etree.DocumentInvalid`` unless ``data`` is a valid ``<sitemapindex>``."""
    _validate("siteindex.xsd", data)
