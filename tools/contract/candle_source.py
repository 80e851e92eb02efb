"""candle-vllm's flags read from a checkout of its source: ``src/main.rs``'s clap ``struct Args``
(``#[derive(Parser)]``), each field with its ``#[arg(...)]`` attribute.

candle-vllm is published neither on PyPI nor on crates.io, so the generator reads a local
checkout at a commit the caller names (``python3 dev.py contract --candle DIR``); CI cannot
regenerate this data. Read by the text of the attribute and field (no Rust parser):
``#[arg(long = "w")]`` -> ``--w``, ``#[arg(long)]`` on ``max_num_seqs`` -> ``--max-num-seqs``,
``short`` -> ``-x``; ``bool`` is a switch (clap's ``SetTrue``); ``Option<T>`` / ``Vec<T>`` open
to ``T``; ``default_value_t`` / ``default_value`` the default.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

MAIN = "src/main.rs"
_STRUCT = re.compile(r"#\[derive\([^)]*Parser[^)]*\)\]\s*(?:#\[command[^\]]*\]\s*)*struct\s+Args\s*\{(.*?)\n\}", re.S)
_FIELD = re.compile(r"#\[arg\((?P<attr>[^\]]*)\)\]\s*(?:///[^\n]*\n\s*|//[^\n]*\n\s*)*(?:pub\s+)?(?P<name>[a-z_][a-z0-9_]*)\s*:\s*(?P<type>[^,\n]+?)\s*,", re.S)
_INTS = {"usize", "u8", "u16", "u32", "u64", "isize", "i32", "i64"}


def _inner(rust_type: str) -> tuple[str, bool]:
    """(the element type, whether it is a list): ``Option<Vec<usize>>`` -> (``usize``, True)."""
    t = rust_type.strip()
    listed = False
    while True:
        m = re.fullmatch(r"(Option|Vec)<(.+)>", t)
        if not m:
            return t, listed
        listed = listed or m.group(1) == "Vec"
        t = m.group(2).strip()


def _kind(t: str) -> str:
    if t in _INTS:
        return "int"
    if t in ("f32", "f64"):
        return "float"
    if t == "bool":
        return "bool"
    return "str"


def read_flags(root: Path) -> list[dict[str, Any]]:
    """Every flag of candle-vllm's ``Args`` in declaration order, as the data holds it."""
    text = (root / MAIN).read_text(encoding="utf-8")
    block = _STRUCT.search(text)
    if block is None:
        raise ValueError(f"{MAIN} has no clap struct Args")
    out = []
    for m in _FIELD.finditer(block.group(1)):
        attr, name = m.group("attr"), m.group("name")
        element, listed = _inner(m.group("type"))
        long = re.search(r'\blong\s*=\s*"([^"]+)"', attr)
        names = []
        if long:
            names.append("--" + long.group(1))
        elif re.search(r"\blong\b", attr):
            names.append("--" + name.replace("_", "-"))
        short = re.search(r"\bshort\s*=\s*'(.)'", attr)
        if short:
            names.append("-" + short.group(1))
        elif re.search(r"\bshort\b(?!\s*=)", attr):
            names.append("-" + name[0])
        if not names:
            continue
        default_t = re.search(r"default_value_t\s*=\s*([^,]+)", attr)
        default_s = re.search(r'default_value\s*=\s*"([^"]*)"', attr)
        default: Any = None
        if default_t:
            raw = default_t.group(1).strip()
            default = {"true": True, "false": False}.get(raw, raw)
            if isinstance(default, str) and re.fullmatch(r"-?\d+", default):
                default = int(default)
            elif isinstance(default, str) and re.fullmatch(r"-?\d+\.\d*", default):
                default = float(default)
        elif default_s:
            default = default_s.group(1)
        kind = _kind(element)
        switch = kind == "bool" and not listed
        out.append({
            "name": names[0], "aliases": names[1:], "kind": "switch" if switch else "value",
            "type": f"{kind}-list" if listed and "value_delimiter" in attr else kind, "choices": None,
            "nargs": "+" if listed and "value_delimiter" not in attr else None,
            "accepts_none": False, "default": default, "default_expr": None, "deprecated": False,
            "replacement": None, "file": MAIN,
        })
    return out


#: Where the source is published (the generator records it; the data cannot be fetched in CI).
REPOSITORY = "https://github.com/EricLBuehler/candle-vllm"


def record(root: Path) -> dict[str, Any]:
    """The data file's entry for the checkout at ``root``: its commit, src/main.rs's sha256, flags."""
    import hashlib

    commit = commit_of(root)
    return {"engine": "candle-vllm", "release": commit,
            "source": {"package": f"EricLBuehler/candle-vllm@{commit} {MAIN}", "index": REPOSITORY,
                       "sha256": hashlib.sha256((root / MAIN).read_bytes()).hexdigest()},
            "flags": read_flags(root)}


def commit_of(root: Path) -> str:
    """The checkout's HEAD commit (40 hex), by ``git rev-parse``."""
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
