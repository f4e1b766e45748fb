"""Run the official JSON-Schema-Test-Suite through pse.JsonSchema.

A test passes when its schema compiles with property_order="any" (strict) and the instance,
as compact JSON, is accepted exactly when the suite says it is valid. Remote references
(http://localhost:1234/...) are served from the suite's remotes/ folder through `retrieve`.

    python tests/json_schema_suite.py            # pass counts per draft
    python tests/json_schema_suite.py --record   # rewrite tests/data/json_schema_suite.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any, Iterator

DRAFTS = {"draft2020-12": "https://json-schema.org/draft/2020-12/schema",
          "draft7": "http://json-schema.org/draft-07/schema#"}
RECORD = Path(__file__).parent / "data" / "json_schema_suite.json"
REMOTE = "http://localhost:1234/"


def suite_root() -> Path:
    shared = os.environ.get("PSE_SHARED") or Path(__file__).resolve().parents[1].parent / "shared"
    return Path(shared) / "data" / "json-schema-test-suite"


def files(draft: str) -> list[Path]:
    base = suite_root() / "tests" / draft
    return sorted(base.rglob("*.json"))


def retriever(root: Path):
    def retrieve(uri: str) -> Any:
        if not uri.startswith(REMOTE):
            raise LookupError(f"no remote {uri}")
        path = root / "remotes" / uri[len(REMOTE):].split("#")[0]
        return json.loads(path.read_text())
    return retrieve


def outcomes(draft: str, path: Path) -> Iterator[tuple[str, str]]:
    """(test id, outcome) for every test in one file. Outcomes: "pass", "unsupported" (the
    schema did not compile), "rejected-valid", "accepted-invalid" (never acceptable)."""
    import pse

    root = suite_root()
    rel = path.relative_to(root / "tests" / draft).as_posix()
    for g, group in enumerate(json.loads(path.read_text())):
        schema = group["schema"]
        if isinstance(schema, dict) and "$schema" not in schema:
            schema = {"$schema": DRAFTS[draft], **schema}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                machine = pse.JsonSchema(schema, property_order="any",
                                         retrieve=retriever(root))
                machine.compile()
        except (pse.PSEError, RecursionError):
            machine = None
        for t, test in enumerate(group["tests"]):
            key = f"{draft}/{rel}#{g}/{t}"
            if machine is None:
                yield key, "unsupported"
                continue
            text = json.dumps(test["data"], separators=(",", ":"), ensure_ascii=False)
            accepted = machine.matches(text)
            if accepted == test["valid"]:
                yield key, "pass"
            else:
                yield key, "rejected-valid" if test["valid"] else "accepted-invalid"


def run(draft: str) -> dict[str, str]:
    return {k: v for path in files(draft) for k, v in outcomes(draft, path)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--record", action="store_true", help="rewrite the recorded outcomes")
    args = parser.parse_args()
    record = {}
    for draft in DRAFTS:
        got = run(draft)
        record.update(got)
        counts: dict[str, int] = {}
        for v in got.values():
            counts[v] = counts.get(v, 0) + 1
        print(f"{draft}: {counts.get('pass', 0)} of {len(got)} pass; {counts}")
    if args.record:
        RECORD.write_text(json.dumps(record, indent=0, sort_keys=True) + "\n")
        print(f"recorded {len(record)} outcomes in {RECORD}")
    sys.exit(0)


if __name__ == "__main__":
    main()
