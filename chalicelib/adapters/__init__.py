"""Storage adapters: the only code that talks to AWS."""
