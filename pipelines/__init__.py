"""Item pipelines: normalise URLs, derive lastmod, record decisions in the ledger."""
