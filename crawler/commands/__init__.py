"""Scrapy commands of the project (``COMMANDS_MODULE``)."""
