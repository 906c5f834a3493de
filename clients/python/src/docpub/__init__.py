"""Docpub client: ``from docpub import Client``; command line: ``docpub --help``."""
from docpub.client import MAX_HTML_BYTES, VERSION as __version__, Client, check_html_size
from docpub.errors import (
    AuthError, ConnectionFailed, DocpubError, LimitError, NotFoundError, ServerError, UsageError,
)

__all__ = [
    "Client", "MAX_HTML_BYTES", "check_html_size", "__version__",
    "DocpubError", "UsageError", "AuthError", "NotFoundError", "LimitError", "ServerError",
    "ConnectionFailed",
]
