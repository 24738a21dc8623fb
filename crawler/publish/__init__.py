"""Publishing: the sitemap writer, the publisher extension, the feed, IndexNow and
the reports."""
