"""The maskbench files a benchmark replays: every one, a random sample, or one shard of them
(shared by maskbench.py and fast_forward.py, which run as scripts from this folder)."""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path
from typing import Any, Iterator

SHARED = Path(os.environ.get("PSE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def shard_arg(text: str) -> tuple[int, int]:
    """`--shard K/N` for argparse: (K, N) with 0 <= K < N."""
    try:
        k, n = (int(x) for x in text.split("/"))
        if not 0 <= k < n:
            raise ValueError
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be K/N with 0 <= K < N, got {text!r}") from None
    return k, n


def maskbench_files(limit: int | None, seed: int, shard: tuple[int, int] = (0, 1),
                    keyword: str | None = None, name: str | None = None
                    ) -> Iterator[tuple[str, Any]]:
    """(file name, its JSON) for the files sorted by name (with `name`, those whose name
    holds it): `limit` of them drawn at random with `seed` (None: all), then every N-th from
    the K-th of `shard` (K, N); with `keyword`, only the schemas that use it."""
    folder = SHARED / "data" / "maskbench"
    if not folder.is_dir():
        sys.exit(f"{folder} not found: set PSE_SHARED to the shared data folder")
    files = sorted(p for p in folder.glob("*.json") if name is None or name in p.name)
    if limit is not None and limit < len(files):
        files = sorted(random.Random(seed).sample(files, limit))
    for path in files[shard[0]::shard[1]]:
        data = json.loads(path.read_text())
        if keyword is None or _uses(data.get("schema"), keyword):
            yield path.name, data


def _uses(schema: Any, keyword: str) -> bool:
    """Whether `keyword` is a key somewhere in `schema` (a rough test: names of properties
    count too)."""
    if isinstance(schema, dict):
        return keyword in schema or any(_uses(v, keyword) for v in schema.values())
    if isinstance(schema, list):
        return any(_uses(v, keyword) for v in schema)
    return False
