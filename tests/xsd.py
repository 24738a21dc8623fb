"""Validate written sitemap files against the official sitemaps.org 0.9 schemas.

The XSDs live in ``shared/xsd/`` beside the checkout (``../shared/xsd``), so
they are not copied into the repository; each is parsed once per test session.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from lxml import etree

XSD_DIR = Path(__file__).resolve().parents[2] / "shared" / "xsd"

# The documents under test are our own output, but parse them as untrusted:
# no entity expansion, no network.
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)


@cache
def _schema(name: str) -> etree.XMLSchema:
    return etree.XMLSchema(etree.parse(str(XSD_DIR / name)))


def _validate(schema_name: str, data: bytes) -> None:
    if not isinstance(data, bytes):
        raise TypeError(f"validate the bytes written, not {type(data).__name__}")
    _schema(schema_name).assertValid(etree.fromstring(data, _PARSER))


def validate_urlset(data: bytes) -> None:
    """Raise ``lxml.etree.DocumentInvalid`` unless ``data`` is a valid ``<urlset>``."""
    _validate("sitemap.xsd", data)


def validate_index(data: bytes) -> None:
    """Raise ``lxml.etree.DocumentInvalid`` unless ``data`` is a valid ``<sitemapindex>``."""
    _validate("siteindex.xsd", data)
