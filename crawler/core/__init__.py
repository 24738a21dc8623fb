"""The words every stage of the crawl shares: URLs, the crawl's agent, paths, items and
decisions."""
