"""Build the deployable template and zip: `python -m infra.package --stage prod --out build`.

Runs `chalice package --merge-template infra/resources.yaml` for the stage and
writes `<out>/sam.json` (the merged template) and `<out>/deployment.zip`.
`make package` and tests/e2e/test_infra.py both go through here, so the tests check
exactly what gets deployed. The Lambda runtime in the template is the Python
that runs this (python3.11 here).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
MERGE_TEMPLATE = ROOT / "infra" / "resources.yaml"
TEMPLATE_NAME = "sam.json"
# What a build folder may hold (this tool's output and deploy.sh's packaged.json).
BUILD_FILES = {"sam.json", "sam.yaml", "deployment.zip", "packaged.json"}
# CloudFormation reads at most 1 MB of template from S3 ("Template body size in an Amazon S3
# object"); deploy.sh checks against the decimal megabyte to stay clear of either reading.
TEMPLATE_S3_LIMIT = 1_000_000


def chalice_command() -> list[str]:
    exe = Path(sys.executable).parent / "chalice"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "chalice.cli"]


def package(stage: str, out: Path) -> Path:
    """Package the app for `stage` into `out` (replaced); returns the template path."""
    import yaml  # a dev dependency: `--compact` (deploy.sh) runs on any python3
    out = Path(out).resolve()
    if out.exists():
        unexpected = {p.name for p in out.iterdir()} - BUILD_FILES
        if out == ROOT or out in ROOT.parents or unexpected:
            raise SystemExit(f"refusing to replace {out}: not a build folder ({sorted(unexpected)[:5]})")
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    # chalice needs a region to name things; the template itself is region-free.
    env.setdefault("AWS_DEFAULT_REGION", env.get("AWS_REGION", "us-east-1"))
    command = chalice_command() + ["package", "--stage", stage, "--merge-template", str(MERGE_TEMPLATE), str(out)]
    result = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise SystemExit(f"chalice package failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    if "Could not install dependencies" in result.stdout + result.stderr:
        # chalice only warns when it finds no Lambda-compatible wheel; the zip would break at import.
        raise SystemExit(f"chalice package could not bundle every dependency:\n{result.stdout}\n{result.stderr}")
    written = out / "sam.yaml"  # chalice writes YAML when the merge template is YAML
    if not written.exists() or not (out / "deployment.zip").exists():
        raise SystemExit(f"chalice package did not write {written} and deployment.zip")
    # Re-serialise as JSON: PyYAML's dump uses anchors/aliases for repeated
    # values, which CloudFormation refuses; JSON has none.
    template = out / TEMPLATE_NAME
    merged = yaml.safe_load(written.read_text())
    resources = merged.get("Resources", {})
    # The same package on the same Python.
    for worker in ("WebhookWorker", "MaintenanceFunction", "ShareFunction", "ViewLogFunction"):
        if worker in resources:
            resources[worker]["Properties"]["Runtime"] = resources["APIHandler"]["Properties"]["Runtime"]
    # Compact, as deployed (`compact` below): indented, the template passes 1 MB and
    # cfn-lint (E1002) and CloudFormation measure the file as written.
    template.write_text(json.dumps(merged, separators=(",", ":"), ensure_ascii=False) + "\n")
    written.unlink()
    precompile(out / "deployment.zip")
    return template


def precompile(zip_path: Path) -> int:
    """Add byte-code to the zip. Lambda's code folder is read-only, so without
    shipped .pyc files every cold start compiles boto3, pydantic and our code
    from source again. Unchecked-hash .pyc files are used without looking at
    source timestamps (zip timestamps are meaningless). Returns files compiled."""
    import compileall
    import py_compile
    import tempfile
    import zipfile

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        with zipfile.ZipFile(zip_path) as archive:
            modes = {info.filename: info.external_attr for info in archive.infolist()}
            archive.extractall(root)
        compileall.compile_dir(str(root), quiet=2, workers=0, legacy=False, optimize=-1,
                               invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
        rebuilt = zip_path.with_suffix(".tmp")
        compiled = 0
        with zipfile.ZipFile(rebuilt, "w", compression=zipfile.ZIP_DEFLATED) as archive:
            for path in sorted(p for p in root.rglob("*") if p.is_file()):
                name = path.relative_to(root).as_posix()
                info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
                info.compress_type = zipfile.ZIP_DEFLATED
                info.external_attr = modes.get(name, 0o644 << 16)
                compiled += name.endswith(".pyc")
                archive.writestr(info, path.read_bytes())
        rebuilt.replace(zip_path)
    return compiled


def compact(template: Path, limit: int = TEMPLATE_S3_LIMIT) -> int:
    """Rewrite `template` without whitespace and return its size. `aws cloudformation
    package --use-json` indents by four spaces, which takes this template past what
    CloudFormation accepts (1.36 MB against 0.40 MB compact, mostly the API definition);
    a template still over `limit` is refused here, before anything is deployed."""
    body = json.dumps(json.loads(template.read_text()), separators=(",", ":"), ensure_ascii=False)
    size = len(body.encode())
    if size > limit:
        raise SystemExit(f"{template} is {size:,} bytes compact; CloudFormation takes at most {limit:,} "
                         "(move the API definition out of the template, or drop routes)")
    template.write_text(body)
    return size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--stage", default="dev", choices=["dev", "prod"])
    parser.add_argument("--out", default="build")
    parser.add_argument("--compact", metavar="TEMPLATE",
                        help="only rewrite TEMPLATE (deploy.sh's packaged.json) without whitespace, checking its size")
    args = parser.parse_args(argv)
    if args.compact:
        size = compact(Path(args.compact))
        print(f"{args.compact}: {size:,} bytes ({size / TEMPLATE_S3_LIMIT:.0%} of CloudFormation's limit)")
        return 0
    template = package(args.stage, Path(args.out))
    print(template)
    return 0


if __name__ == "__main__":
    sys.exit(main())
