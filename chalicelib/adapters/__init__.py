"""Storage adapters: the only code that talks to a database or a blob store.

`aws` (DynamoDB + S3) runs in Lambda; `sqlite` (SQLite + files) runs `make run`
and the admin CLI. Both implement chalicelib.ports and raise only the port's
errors (chalicelib/ports/errors.py). chalicelib/wiring.py, the composition root,
picks one from `DOCPUB_STORAGE`; nothing else imports this package."""
