"""Pure rules: no I/O. Plans, limits and the edit engine."""
