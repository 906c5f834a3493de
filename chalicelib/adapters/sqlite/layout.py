"""Where the embedded store keeps its files in a data folder (the package's
open_storage and the old snapshot's importer both name them)."""
DATABASE_FILE = "docpub.sqlite3"
BLOBS_FOLDER = "blobs"
