"""``python3 dev.py contract``: write the engine's contract per release from the releases themselves.

    python3 dev.py contract            download each release's sdist from PyPI, read it, write
                                       core/data/vllm_releases.json (and its schema)
    python3 dev.py contract --check    the same into memory: exit 1 when the committed file differs
    python3 dev.py contract --source 0.11.0=DIR   read release 0.11.0 from an unpacked sdist at DIR
                                       (no download; the sha256 is then the committed one)
    python3 dev.py contract --candle DIR   also read candle-vllm's flags from a git checkout at DIR into
                                       core/data/candle_vllm_commits.json (candle-vllm is on neither PyPI
                                       nor crates.io: CI cannot regenerate that file; --check leaves it)

Each release's sdist (``vllm-X.tar.gz``) is found on the package index's simple API (PEP 691 JSON,
what pip reads), its sha256 checked against the index's, unpacked into a temporary folder and
read by :mod:`tools.contract.vllm_source` with ``ast`` (nothing of vLLM is imported).
``pip download --no-binary :all:`` cannot fetch it: pip prepares the sdist's metadata, and vLLM's
setup.py imports torch. The output is deterministic: the same releases give the same bytes.

Exit codes (tools/cli.py): 0 written or current, 1 ``--check`` found a difference, 2 bad
input, 3 a download or read failure.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

from core.engines import contracts
from tools import cli
from tools.contract import RELEASES, candle_source, vllm_source

#: The package index's simple API (PEP 691); ``PIP_INDEX_URL`` overrides it, as for pip.
INDEX = "https://pypi.org/simple/"


def index_url() -> str:
    """The simple API's base URL, with a final slash."""
    return (os.environ.get("PIP_INDEX_URL") or INDEX).rstrip("/") + "/"


def sdist_entry(release: str) -> dict[str, Any]:
    """The index's record of ``vllm-<release>.tar.gz``: url and sha256."""
    req = urllib.request.Request(index_url() + "vllm/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=120) as resp:  # noqa: S310 (the package index)
        files = json.load(resp)["files"]
    name = f"vllm-{release}.tar.gz"
    for f in files:
        if f["filename"] == name:
            return {"filename": name, "url": f["url"], "sha256": f["hashes"]["sha256"]}
    raise LookupError(f"{name} is not on {index_url()}vllm/")


def download(entry: dict[str, Any]) -> bytes:
    """The sdist's bytes, refused (ValueError) when their sha256 is not the index's."""
    with urllib.request.urlopen(entry["url"], timeout=600) as resp:  # noqa: S310 (the package index)
        data: bytes = resp.read()
    digest = hashlib.sha256(data).hexdigest()
    if digest != entry["sha256"]:
        raise ValueError(f"{entry['filename']}: sha256 {digest} is not the index's {entry['sha256']}")
    return data


def unpack(data: bytes, into: Path) -> Path:
    """The sdist's files under ``into``; returns its top folder (``vllm-0.11.0``)."""
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        members = [m for m in tar.getmembers() if m.isfile() and (m.name.endswith((".py", ".txt")) or "docker/" in m.name)]
        tar.extractall(into, members=members, filter="data")
    tops = [p for p in into.iterdir() if p.is_dir()]
    if len(tops) != 1:
        raise ValueError("the sdist has no single top folder")
    return tops[0]


def record(release: str, root: Path, package: str, sha256: str) -> dict[str, Any]:
    """One release's entry of the data file."""
    facts = vllm_source.read_release(root)
    return {"engine": "vllm", "release": release,
            "source": {"package": package, "index": INDEX + "vllm/", "sha256": sha256}, **facts}


def committed_sha(release: str) -> str | None:
    """The sha256 the committed data records for ``release``, or None."""
    try:
        data = json.loads(contracts.VLLM_FILE.path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return next((r["source"]["sha256"] for r in data if r.get("release") == release), None)


def generate(sources: dict[str, Path]) -> str:
    """The data file's text for :data:`RELEASES`, each read from ``sources[release]`` when given,
    else downloaded. Validated by the contract's schema type before it is returned."""
    entries = []
    for release in RELEASES:
        package = f"vllm-{release}.tar.gz"
        if release in sources:
            sha = committed_sha(release)
            if sha is None:
                raise ValueError(f"--source {release}: no committed sha256 to record; run without --source once")
            print(f"contract: reading vLLM {release} from {sources[release]}", file=sys.stderr)
            entries.append(record(release, sources[release], package, sha))
            continue
        entry = sdist_entry(release)
        print(f"contract: reading vLLM {release} from {entry['filename']} (sha256 {entry['sha256'][:12]}...)",
              file=sys.stderr)
        data = download(entry)
        with tempfile.TemporaryDirectory() as tmp:
            root = unpack(data, Path(tmp))
            entries.append(record(release, root, entry["filename"], entry["sha256"]))
    contracts.VLLM_FILE.adapter.validate_python(entries)
    return json.dumps(entries, indent=1, ensure_ascii=False) + "\n"


def write_candle(root: Path, check: bool) -> int:
    """core/data/candle_vllm_commits.json (and its schema) from the checkout at ``root``, or with
    ``check`` a comparison with the committed file."""
    if not (root / candle_source.MAIN).is_file():
        return cli.fail("contract", f"--candle {root}: no {candle_source.MAIN} there; give a candle-vllm checkout")
    try:
        entry = candle_source.record(root)
    except (OSError, ValueError, subprocess.CalledProcessError) as err:
        return cli.fail("contract", f"cannot read candle-vllm at {root}: {err}", code=cli.CRASH)
    print(f"contract: reading candle-vllm {entry['release']} from {root}", file=sys.stderr)
    contracts.CANDLE_FILE.adapter.validate_python([entry])
    text = json.dumps([entry], indent=1, ensure_ascii=False) + "\n"
    path, schema = contracts.CANDLE_FILE.path, contracts.CANDLE_FILE.schema_text()
    if check:
        same = path.is_file() and path.read_text(encoding="utf-8") == text
        same = same and contracts.CANDLE_FILE.schema_path.read_text(encoding="utf-8") == schema
        print(f"contract: core/data/{path.name} {'is current' if same else 'differs'}", file=sys.stderr)
        return cli.OK if same else cli.VERDICT
    path.write_text(text, encoding="utf-8")
    contracts.CANDLE_FILE.schema_path.write_text(schema, encoding="utf-8")
    print(f"contract: wrote core/data/{path.name} (candle-vllm {entry['release'][:7]})", file=sys.stderr)
    return cli.OK


def main(argv: list[str] | None = None) -> int:
    """The command (see the module docstring); its exit code."""
    parser = argparse.ArgumentParser(prog="dev.py contract", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="compare with the committed file; exit 1 when it differs")
    parser.add_argument("--source", action="append", default=[], metavar="RELEASE=DIR",
                        help="read RELEASE from an unpacked sdist at DIR instead of downloading it")
    parser.add_argument("--candle", metavar="DIR", help="read candle-vllm's src/main.rs from the git checkout at DIR")
    args = parser.parse_args(argv)
    if args.candle:
        code = write_candle(Path(args.candle), args.check)
        if code != cli.OK:
            return code
    sources: dict[str, Path] = {}
    for item in args.source:
        release, eq, folder = item.partition("=")
        if not eq or release not in RELEASES or not Path(folder).is_dir():
            return cli.fail("contract", f"--source {item!r}: expected RELEASE=DIR with RELEASE one of "
                                        f"{', '.join(RELEASES)} and DIR a folder", code=cli.BAD_INPUT)
        sources[release] = Path(folder)
    try:
        text = generate(sources)
    except (OSError, LookupError, ValueError, vllm_source.SourceError) as err:
        return cli.fail("contract", f"cannot read the releases: {err}", code=cli.CRASH)
    path = contracts.VLLM_FILE.path
    schema = contracts.VLLM_FILE.schema_text()
    if args.check:
        same = path.is_file() and path.read_text(encoding="utf-8") == text
        same_schema = contracts.VLLM_FILE.schema_path.is_file() and \
            contracts.VLLM_FILE.schema_path.read_text(encoding="utf-8") == schema
        if same and same_schema:
            print(f"contract: core/data/{path.name} is current ({', '.join(RELEASES)})", file=sys.stderr)
            return cli.OK
        print(f"contract: core/data/{path.name} differs from what the releases give; run `python3 dev.py contract`",
              file=sys.stderr)
        return cli.VERDICT
    path.write_text(text, encoding="utf-8")
    contracts.VLLM_FILE.schema_path.write_text(schema, encoding="utf-8")
    print(f"contract: wrote core/data/{path.name} and {contracts.VLLM_FILE.schema_path.name} "
          f"({', '.join(RELEASES)})", file=sys.stderr)
    return cli.OK


if __name__ == "__main__":
    cli.run(lambda: main(sys.argv[1:]), "dev.py contract")
