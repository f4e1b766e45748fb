import json

import pytest

from helpers import check_boundaries, run_tokens
from pse import GrammarError, Json

VALID = [
    "0", "-0", "12", "-3.25", "1e9", "1E+2", "2.5e-3", '""', '"a"', '"\\"\\\\\\/\\b\\f\\n\\r\\t"',
    '"\\u00e9\\uD83D\\uDE00"', '"é東🎉"', "true", "false", "null", "[]", "{}", "[1,[2,[3]]]",
    '{"a":1,"b":[true,false,null],"c":{"d":"e"}}', '[{"":{}}]', '{"a":{"a":{"a":[]}}}',
]
INVALID = [
    "", "01", "-", "1.", ".5", "1e", "+1", "0x10", '"', '"\\x"', '"\\u12"', '"a\nb"', "tru",
    "nulls", "[", "[1,]", "[,1]", "{,}", '{"a"}', '{"a":}', '{"a":1,}', "{a:1}", "[1 2]",
    "NaN", "Infinity", "[1] ", " [1]", "[ 1]", '{"a": 1}', "'a'", "[]]",
]


@pytest.mark.parametrize("text", VALID)
def test_valid(text):
    json.loads(text)  # the oracle agrees it is JSON
    assert Json().matches(text)


@pytest.mark.parametrize("text", INVALID)
def test_invalid(text):
    assert not Json().matches(text)


@pytest.mark.parametrize("text", ['{"a":[1,2,{"b":"é🎉\\n"}],"c":-1.5e3}', "[1,2]", '"\\u00e9"'])
def test_boundaries(text):
    check_boundaries(Json(), text)


def test_partial_prefixes_of_valid_json_are_live():
    text = '{"key":[1,-2.5e3,"v\\u00e9",true,null,{"x":{}}]}'
    j = Json()
    for i in range(len(text) + 1):
        assert j.matches(text[:i], partial=True)
    assert not j.matches('{"key":]', partial=True)


def test_whitespace_option():
    j = Json(whitespace=2)
    assert j.matches('{ "a" : [ 1 , 2 ] }')
    assert j.matches('{\n "a":1}')
    assert not j.matches('{   "a":1}')  # three blanks in a row
    assert not j.matches(" 1")
    assert not Json().matches("[1, 2]")


def test_current_value_is_parsed():
    s = run_tokens(Json(), ['{"a":', "[1,", '"x"]}'])[0]
    assert s.get_current_value() == {"a": [1, "x"]}
    partial = run_tokens(Json(), ['{"a":'])[0]
    assert partial.get_current_value() == '{"a":'


def test_number_then_more_digits_stays_ambiguous_free():
    live = run_tokens(Json(), ["[12"])
    assert len(live) == 1


def test_deep_nesting():
    depth = 300
    assert Json().matches("[" * depth + "]" * depth)
    assert Json().matches('{"a":' * depth + "1" + "}" * depth)


def test_bad_argument():
    with pytest.raises(GrammarError, match="whitespace"):
        Json(whitespace=-1)
