"""Docpub: publish HTML documents behind shareable links (Chalice on AWS Lambda)."""
