"""The local signer (ports/signing.py): a P-256 key (ES256) in a PEM file in the data
folder, `signing-key.pem`, made with mode 0600 on first use. Rotation writes a new key
in its place (a temporary file, fsync, rename: never a half-written key); the retired
private key is gone, its public JWK stays in the signing-key records. Each signature
looks at the file first (one stat), so a server signs with a rotated key at once."""
from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Mapping, Optional

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from chalicelib.domain import provenance

KEY_FILE = "signing-key.pem"


class LocalKeySigner:
    def __init__(self, key: ec.EllipticCurvePrivateKey, path: Path):
        self._key = key
        self._jwk = provenance.public_jwk(key)
        self.path = path

    @property
    def holder(self) -> str:
        return f"file:{self.path.name}"

    def public_jwk(self) -> Mapping[str, str]:
        return self._jwk

    def sign(self, message: bytes) -> bytes:
        return provenance.der_to_raw(self._key.sign(message, ec.ECDSA(hashes.SHA256())))


class LocalSigners:
    def __init__(self, data_dir: str):
        self.path = Path(data_dir) / KEY_FILE
        self._lock = threading.Lock()
        self._loaded: Optional[tuple[tuple[int, int], LocalKeySigner]] = None

    def current(self) -> LocalKeySigner:
        with self._lock:
            try:
                stat = self.path.stat()
            except FileNotFoundError:
                self._write(ec.generate_private_key(ec.SECP256R1()), exclusive=True)
                stat = self.path.stat()
            mark = (stat.st_ino, stat.st_mtime_ns)
            if self._loaded is None or self._loaded[0] != mark:
                key = serialization.load_pem_private_key(self.path.read_bytes(), password=None)
                if not isinstance(key, ec.EllipticCurvePrivateKey):
                    raise RuntimeError(f"{self.path} does not hold a P-256 key")
                self._loaded = (mark, LocalKeySigner(key, self.path))
            return self._loaded[1]

    def rotate(self) -> LocalKeySigner:
        with self._lock:
            self._write(ec.generate_private_key(ec.SECP256R1()), exclusive=False)
            self._loaded = None
        return self.current()

    def _write(self, key: ec.EllipticCurvePrivateKey, exclusive: bool) -> None:
        """The key file, 0600 from its first byte; `exclusive`: only if none exists yet (two
        processes making the first key keep the one that was written first)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
        temporary = self.path.with_name(f".{KEY_FILE}.{os.getpid()}.{threading.get_ident()}")
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, pem)
            os.fsync(fd)
        finally:
            os.close(fd)
        if exclusive:
            try:
                os.link(temporary, self.path)  # fails if another process made it first
            except FileExistsError:
                pass
            os.unlink(temporary)
        else:
            os.replace(temporary, self.path)
        folder = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
