"""Reading one HTML page: links, directives, canonicals, dates, rich data, content hashes."""
