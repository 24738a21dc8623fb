"""The Sitemaps protocol's numbers, in one place.

Every module that writes or checks a sitemap imports its limits from here. Each value
cites the protocol (sitemaps.org; copies in ``shared/seeds/``), the 0.9 schemas
(``shared/xsd/``) or, for the extensions, Google's schemas (``tests/xsd/``).
"""

from __future__ import annotations

from typing import Final

# "Sitemap files have a limit of 50,000 URLs and 50MiB (52,428,800 bytes) per
# sitemap" (uncompressed: gzip buys no room); sitemap.xsd agrees.
MAX_URLS_PER_FILE: Final = 50_000
MAX_BYTES_PER_FILE: Final = 50 * 1024 * 1024
# "Sitemap index files may not list more than 50,000 Sitemaps and must be no
# larger than 50MiB"; siteindex.xsd agrees.
MAX_SITEMAPS_PER_INDEX: Final = 50_000

# <loc>: "This value must be less than 2,048 characters", so 2,047 at most.
# (The XSDs say maxLength 2048; the prose is the stricter of the two.)
MAX_LOC_LENGTH: Final = 2047
# sitemap.xsd tLoc: <xsd:minLength value="12"/>; a shorter <loc> fails validation.
MIN_LOC_LENGTH: Final = 12
# Google's image sitemap extension (sitemap-image.xsd, <image:image>): "Each URL
# (<loc> tag) can include up to 1,000 <image:image> tags."
MAX_IMAGES_PER_URL: Final = 1_000

# sitemap-video.xsd: <video:title> maxLength 100, <video:description> 2048,
# <video:duration> in seconds, maxInclusive 28800 (Google asks for 1 at least).
MAX_VIDEO_TITLE_LENGTH: Final = 100
MAX_VIDEO_DESCRIPTION_LENGTH: Final = 2048
MIN_VIDEO_DURATION: Final = 1
MAX_VIDEO_DURATION: Final = 28_800

# Google News sitemaps: "Sitemaps are capped at 1,000 <news:news> entries each"
# (shared/seeds/, "News Sitemaps").
MAX_NEWS_URLS_PER_FILE: Final = 1_000

# The protocol's namespace, the targetNamespace of both schemas.
SITEMAP_NS: Final = "http://www.sitemaps.org/schemas/sitemap/0.9"

# The extensions' namespaces (Google's schemas), and XHTML's for hreflang <xhtml:link>.
IMAGE_NS: Final = "http://www.google.com/schemas/sitemap-image/1.1"
VIDEO_NS: Final = "http://www.google.com/schemas/sitemap-video/1.1"
NEWS_NS: Final = "http://www.google.com/schemas/sitemap-news/0.9"
XHTML_NS: Final = "http://www.w3.org/1999/xhtml"
