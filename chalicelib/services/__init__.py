"""Use cases. Every rule of the product lives here; REST, MCP, dashboard and
share links are thin adapters over these functions so they cannot drift apart."""
