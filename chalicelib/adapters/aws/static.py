"""The static site in S3 (ports/static.py): objects under `static/<site>/` in the
documents bucket, which CloudFront reads with origin access control (OriginPath
`/static/<site>`: the public path is the rest of the key). Only the two headers S3
keeps with an object travel with it (Content-Type, Cache-Control); CloudFront's
response-headers policies add the rest (infra/resources.yaml)."""
from __future__ import annotations

from typing import Optional

from botocore.exceptions import ClientError

from chalicelib import config
from chalicelib.adapters.aws import clients as aws
from chalicelib.adapters.aws.errors import storage_errors
from chalicelib.ports.static import SITES, StaticObject

ROOT = "static/"


def object_key(site: str, path: str) -> str:
    if site not in SITES or not path.startswith("/d/") or any(part in ("", ".", "..") for part in path[1:].split("/")):
        raise ValueError(f"not a static path: {site!r} {path!r}")
    return f"{ROOT}{site}{path}"


@storage_errors
class S3StaticSite:
    enabled = True

    def __init__(self, bucket: Optional[str] = None):
        self._bucket = bucket

    @property
    def bucket(self) -> str:
        return self._bucket or config.bucket_name()

    def put(self, site: str, obj: StaticObject) -> None:
        aws.s3().put_object(Bucket=self.bucket, Key=object_key(site, obj.path), Body=obj.body,
                            ContentType=obj.content_type, CacheControl=obj.cache_control)

    def get(self, site: str, path: str) -> Optional[StaticObject]:
        try:
            found = aws.s3().get_object(Bucket=self.bucket, Key=object_key(site, path))
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404", "403", "AccessDenied"):
                return None
            raise
        return StaticObject(path, found["Body"].read(), found.get("ContentType", ""), found.get("CacheControl", ""))

    def delete_link(self, site: str, share_id: str) -> int:
        page = object_key(site, f"/d/{share_id}")
        keys = []
        paginator = aws.s3().get_paginator("list_objects_v2")
        for listing in paginator.paginate(Bucket=self.bucket, Prefix=page):
            keys += [item["Key"] for item in listing.get("Contents", [])
                     if item["Key"] == page or item["Key"].startswith(page + "/")]
        for start in range(0, len(keys), 1000):
            aws.s3().delete_objects(Bucket=self.bucket, Delete={
                "Objects": [{"Key": key} for key in keys[start:start + 1000]], "Quiet": True})
        return len(keys)
