"""The Sitemaps protocol's numbers, in one place.

Every module that writes or checks a sitemap imports its limits from here, so a
limit is changed (or audited) once. Each value cites the protocol text
(sitemaps.org, "protocol.html"; copies in ``shared/seeds/``) or the official 0.9
schemas (``shared/xsd/sitemap.xsd``, ``shared/xsd/siteindex.xsd``).
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

# Google's image sitemap extension allows up to 1,000 <image:image> elements in
# one <url>.
MAX_IMAGES_PER_URL: Final = 1_000

# The <urlset> (and <sitemapindex>) "references the current protocol standard":
# xmlns="http://www.sitemaps.org/schemas/sitemap/0.9", the targetNamespace of
# both schemas.
SITEMAP_NS: Final = "http://www.sitemaps.org/schemas/sitemap/0.9"
