"""The Sitemaps protocol's numbers, in one place.

Every module that writes or checks a sitemap imports its limits from here, so a
limit is changed (or audited) once. Each value cites the protocol text
(sitemaps.org, "protocol.html"; copies in ``shared/seeds/``), the official 0.9
schemas (``shared/xsd/sitemap.xsd``, ``shared/xsd/siteindex.xsd``) or, for the
image, video, news and hreflang extensions, Google's schemas (copies in
``tests/xsd/``) and the extension texts in ``shared/seeds/``.
"""

from __future__ import annotations

from typing import Final

# "Sitemap files have a limit of 50,000 URLs and 50MiB (52,428,800 bytes) per
# sitemap." sitemap.xsd agrees: "Container for a set of up to 50,000 document
# elements."
MAX_URLS_PER_FILE: Final = 50_000

# Same sentence; the size is "50 MiB (uncompressed)": gzip does not buy room.
# Older copies of the protocol said 10 MB; 50 MiB is the current figure.
MAX_BYTES_PER_FILE: Final = 50 * 1024 * 1024

# "Sitemap index files may not list more than 50,000 Sitemaps and must be no
# larger than 50MiB"; siteindex.xsd: "Container for a set of up to 50,000
# sitemap URLs." (The byte limit of an index is MAX_BYTES_PER_FILE.)
MAX_SITEMAPS_PER_INDEX: Final = 50_000

# <loc>: "This value must be less than 2,048 characters", so 2,047 at most.
# (The XSDs say maxLength 2048; the prose is the stricter of the two.)
MAX_LOC_LENGTH: Final = 2047

# sitemap.xsd tLoc and siteindex.xsd tLocSitemap: <xsd:minLength value="12"/>.
# Not in the prose, but a shorter <loc> ("http://a.b/") fails validation.
MIN_LOC_LENGTH: Final = 12

# Google's image sitemap extension (sitemap-image.xsd, <image:image>): "Each URL
# (<loc> tag) can include up to 1,000 <image:image> tags."
MAX_IMAGES_PER_URL: Final = 1_000

# Google's video sitemap extension (sitemap-video.xsd): <video:title> has
# <xsd:maxLength value="100"/>, <video:description> <xsd:maxLength value="2048"/>,
# and <video:duration> "The duration of the video in seconds", a
# nonNegativeInteger with <xsd:maxInclusive value="28800"/> (eight hours). Google
# asks for 1 second at least; 0 is no duration.
MAX_VIDEO_TITLE_LENGTH: Final = 100
MAX_VIDEO_DESCRIPTION_LENGTH: Final = 2048
MIN_VIDEO_DURATION: Final = 1
MAX_VIDEO_DURATION: Final = 28_800

# Google News sitemaps: "Sitemaps are capped at 1,000 <news:news> entries each
# ... exceeding limits requires splitting into multiple files via a sitemap
# index" (shared/seeds/, "News Sitemaps"; Google's "Build a Google News
# sitemap" says the same). The 50,000 URLs and 50 MiB of a sitemap apply too.
MAX_NEWS_URLS_PER_FILE: Final = 1_000

# The <urlset> (and <sitemapindex>) "references the current protocol standard":
# xmlns="http://www.sitemaps.org/schemas/sitemap/0.9", the targetNamespace of
# both schemas.
SITEMAP_NS: Final = "http://www.sitemaps.org/schemas/sitemap/0.9"

# The extensions' namespaces: the targetNamespace of Google's sitemap-image.xsd,
# sitemap-video.xsd and sitemap-news.xsd, and XHTML's for <xhtml:link> (hreflang
# alternates: "The sitemap namespace must include the XHTML extension:
# xmlns:xhtml="http://www.w3.org/1999/xhtml"").
IMAGE_NS: Final = "http://www.google.com/schemas/sitemap-image/1.1"
VIDEO_NS: Final = "http://www.google.com/schemas/sitemap-video/1.1"
NEWS_NS: Final = "http://www.google.com/schemas/sitemap-news/0.9"
XHTML_NS: Final = "http://www.w3.org/1999/xhtml"
