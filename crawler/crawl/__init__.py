"""The crawl: the spider, the frontier and its rules, the page judge, seeds, traps,
learned parameters and calendars."""
