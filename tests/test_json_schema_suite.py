"""The official JSON-Schema-Test-Suite: every test's outcome is recorded; any change fails.

After an improvement, rewrite the record with `python tests/json_schema_suite.py --record`
and review the diff. "accepted-invalid" outcomes are listed below with their reason; any
other one fails.
"""

from __future__ import annotations

import json

import pytest

import json_schema_suite as suite

# An instance the suite calls invalid that pse accepts, and why that is right or known.
ACCEPTED_INVALID = {
    # contentMediaType / contentEncoding are annotations (draft 7 section 8 says validators
    # need not check them); the optional tests check them anyway.
    **{f"draft7/optional/content.json#{g}/1": "content keywords are annotations"
       for g in range(3)},
    "draft7/optional/content.json#2/2": "content keywords are annotations",
}


@pytest.fixture(scope="module")
def recorded() -> dict[str, str]:
    if not suite.suite_root().is_dir():
        pytest.skip(f"the JSON-Schema-Test-Suite is not at {suite.suite_root()} (set PSE_SHARED)")
    return json.loads(suite.RECORD.read_text())


@pytest.mark.parametrize("draft", sorted(suite.DRAFTS))
def test_suite_outcomes_are_as_recorded(recorded, draft):
    got = suite.run(draft)
    expected = {k: v for k, v in recorded.items() if k.startswith(draft + "/")}
    changed = {k: (expected.get(k), v) for k, v in got.items() if expected.get(k) != v}
    changed.update({k: (v, None) for k, v in expected.items() if k not in got})
    assert not changed, f"{len(changed)} outcomes changed (recorded, now): {changed}"


@pytest.mark.parametrize("draft", sorted(suite.DRAFTS))
def test_suite_accepts_no_invalid_instance(recorded, draft):
    wrong = {k for k, v in suite.run(draft).items() if v == "accepted-invalid"}
    assert wrong <= set(ACCEPTED_INVALID), sorted(wrong - set(ACCEPTED_INVALID))


def test_checked_subschemas_agree_with_check_node_and_places(recorded):
    """check_document's quick walk (`_checked_subschemas`: one loop over a node's keys) passes
    a schema object exactly where `check_node` does, and finds the schemas `_places` lists,
    on every schema object of the suite (both drafts, the optional tests too) and on those
    with a keyword of the wrong type."""
    from pse import schema_types
    from pse.errors import SchemaError

    nodes: list = []
    for draft in sorted(suite.DRAFTS):
        for path in suite.files(draft):
            nodes += [group["schema"] for group in json.loads(path.read_text())]
    bad = [{"properties": True}, {"items": [1]}, {"allOf": []}, {"required": "a"},
           {"dependencies": {"a": 3}}, {"not": None}, {"minLength": -1}, "string", None]
    seen: set[int] = set()
    checked = 0
    while nodes:
        node = nodes.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        found = schema_types._checked_subschemas(node)
        try:
            schema_types.check_node(node, "#")
        except SchemaError:
            assert found is None, node
            continue
        assert found is not None, node
        places = [sub for sub, _, _ in schema_types._places(node)] if isinstance(node, dict) \
            else []
        assert sorted(map(id, found)) == sorted(map(id, places)), node
        nodes += places
        checked += 1
    for node in bad:
        assert schema_types._checked_subschemas(node) is None, node
    assert checked > 1500
