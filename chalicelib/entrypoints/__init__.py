"""Adapters from the outside world (REST, MCP, share pages, dashboard) to services."""
