"""Secret scanning (issue 36, contract 7g): CPU per input at 256 KiB, 1 MiB and 4 MiB,
ordinary and adversarial, and the false positives on a corpus of ordinary documents.

    .venv/bin/python -m bench.scanning [--repeat N]

Inputs (each cut to the size):
- prose: this repository's README and docs, repeated;
- html_report: tests/data/scanning_corpus's HTML report, repeated;
- keyword_flood: every keyword of every rule, one after another (each rule runs);
- example_keys: `aws_key = AKIAIOSFODNN7EXAMPLE` lines (each a candidate, each allowlisted);
- distinct_example_keys: the same with a different key on every line (`AKIA` + 9 random
  characters + `EXAMPLE`: no two candidates alike, each judged);
- low_entropy: `password = aaaaaaaaaaaaaaaa` lines (each a candidate, each too plain);
- one_char: a single byte repeated (no keyword; the PII patterns' worst);
- digit_runs: `1 ` repeated (card-number candidates everywhere).

The floor, measured in the same run: one SHA-256 of the input (one pass in C). Goals: at
most 1 s of CPU at 4 MiB for ordinary documents (issue 36); under 10 s for any input
within limits (issue 33). The scan runs with PII on (the most work).

False positives: the corpus is tests/data/scanning_corpus (README, reports, code samples
with placeholder keys), this repository's Markdown, and the README of every Python package
installed beside it (their METADATA long descriptions): real documents, none of them
meant to hold a secret.
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

from bench._common import median_cpu, print_header, print_table

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "data" / "scanning_corpus"
SIZES = [256 * 1024, 1024 * 1024, 4 * 1024 * 1024]


def _cut(unit: bytes, size: int) -> bytes:
    return (unit * (size // len(unit) + 1))[:size]


def _distinct_examples(size: int) -> bytes:
    import random
    import string

    rng, alphabet = random.Random(36), string.ascii_uppercase + "234567"
    lines, total = [], 0
    while total < size:
        line = ("aws_key = AKIA" + "".join(rng.choice(alphabet) for _ in range(9)) + "EXAMPLE\n").encode()
        lines.append(line)
        total += len(line)
    return b"".join(lines)


def inputs() -> dict[str, bytes]:
    from chalicelib.domain import scanning

    prose = b"\n".join(p.read_bytes() for p in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))])
    words = sorted({k.decode() for rule in scanning.rule_set().rules for k in rule.keywords})
    return {
        "prose": prose,
        "html_report": (CORPUS / "quarterly-report.html").read_bytes(),
        "keyword_flood": (" = ".join(words) + "\n").encode(),
        "example_keys": b"aws_key = AKIAIOSFODNN7EXAMPLE\n",
        "distinct_example_keys": _distinct_examples(max(SIZES)),
        "low_entropy": b"password = aaaaaaaaaaaaaaaa\n",
        "one_char": b"a",
        "digit_runs": b"1 ",
    }




def corpus_files() -> list[tuple[str, bytes]]:
    files = [(f"corpus/{p.name}", p.read_bytes()) for p in sorted(CORPUS.iterdir())]
    files += [(str(p.relative_to(ROOT)), p.read_bytes())
              for p in [ROOT / "README.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]]
    site = Path(sys.prefix) / "lib"
    for meta in sorted(site.glob("python3*/site-packages/*.dist-info/METADATA")):
        text = meta.read_bytes()
        body = text.split(b"\n\n", 1)[1] if b"\n\n" in text else b""  # the long description
        if len(body) > 200:
            files.append((f"readme/{meta.parent.name}", body))
    return files


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from chalicelib.domain import scanning

    start = time.process_time()
    scanning.rule_set()
    load = time.process_time() - start
    print_header("Secret scanning (bench/scanning.py, issue 36)")
    print(f"Rules: {scanning.rule_count()} content rules (gitleaks' list and docpub-api-key), "
          f"{len(scanning.rule_set().keywords)} keywords; compiled once per process in {load * 1000:.0f} ms "
          f"of CPU. CPU time (process_time), median of {args.repeat}, PII on; the floor is one SHA-256 of "
          "the same input.\n")
    rows = []
    for name, unit in inputs().items():
        for size in SIZES:
            data = _cut(unit, size)
            floor = median_cpu(lambda: hashlib.sha256(data).digest(), args.repeat)
            spent = median_cpu(lambda: scanning.scan(data, pii=True), args.repeat)
            found = scanning.scan(data, pii=True)
            secrets = sum(1 for f in found if f.kind == "secret")
            rows.append([name, f"{size // 1024} KiB", f"{spent:.3f} s", f"{floor * 1000:.1f} ms",
                         f"{spent / floor:.0f}x" if floor else "n/a", f"{secrets} / {len(found) - secrets}"])
    print_table(["input", "size", "scan CPU", "floor (SHA-256)", "ratio", "findings (secret / PII)"], rows)

    files = corpus_files()
    hits = []
    total_bytes = 0
    for name, data in files:
        total_bytes += len(data)
        for finding in scanning.scan(data):
            hits.append([name, finding.rule, finding.line, finding.preview])
    print(f"False positives: {len(hits)} findings in {len(files)} ordinary documents "
          f"({total_bytes / 1048576:.1f} MiB): {len([f for f in files if f[0].startswith('corpus/')])} of "
          f"tests/data/scanning_corpus, the repository's Markdown, and "
          f"{len([f for f in files if f[0].startswith('readme/')])} installed packages' READMEs.\n")
    if hits:
        print_table(["document", "rule", "line", "preview"], hits)


if __name__ == "__main__":
    main()
