"""The `pse` command: offline generation, a local model directory, statistics and errors."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from conftest import REPO_ROOT, tokenizer_path
from lm import qwen  # lm skips these tests where torch is missing

from pse.cli import main  # noqa: E402

jsonschema = pytest.importorskip("jsonschema")

SCHEMA_FILE = REPO_ROOT / "examples" / "character.schema.json"
SCHEMA = json.loads(SCHEMA_FILE.read_text())


def run(capsys, *args: str) -> tuple[int, list[str], str]:
    """`pse generate` with the arguments (and the tiny random model unless --model is one of
    them): the exit status, stdout's lines and stderr."""
    if "--model" not in args:
        args = (*args, "--model", "random")
    status = main(["generate", *args])
    out, err = capsys.readouterr()
    return status, out.splitlines(), err


def statistic(err: str, name: str) -> int:
    return int(re.search(rf"^{name}\s+([\d,]+)", err, re.M).group(1).replace(",", ""))


def test_offline_generation_statistics_and_fast_forward(capsys):
    args = ["--schema", str(SCHEMA_FILE), "--prompt", "A character:", "--seed", "3"]
    status, lines, err = run(capsys, *args, "--samples", "3")
    assert status == 0, err
    assert len(lines) == 3
    for line in lines:
        jsonschema.validate(json.loads(line), SCHEMA)
    assert "RANDOM weights" in err
    assert "[3/3]" in err  # the progress display (a line per tenth when not on a terminal)
    assert re.search(r"^samples\s+3 \(3 complete, 3 valid", err, re.M)
    tokens, passes = statistic(err, "tokens"), statistic(err, "forward passes")
    forced = int(re.search(r"\(([\d,]+) forced", err).group(1))
    assert passes == tokens - forced and forced > 0
    again = run(capsys, *args)[1]
    assert again == lines[:1], "the same seed gives the same samples"
    status, lines, err = run(capsys, *args, "--no-fast-forward")
    assert status == 0 and len(lines) == 1
    jsonschema.validate(json.loads(lines[0]), SCHEMA)
    assert statistic(err, "forward passes") == statistic(err, "tokens")
    assert "(0 forced" in err


def test_running_out_of_tokens_is_reported(capsys):
    status, lines, err = run(capsys, "--schema", str(SCHEMA_FILE), "--prompt", "x",
                             "--max-new-tokens", "5")
    assert status == 1 and len(lines) == 1  # the text streamed so far
    assert "stopped after --max-new-tokens 5" in err and f"{lines[0]!r}" in err


def test_a_tokenizer_file(capsys, tmp_path):
    schema = tmp_path / "s.json"
    schema.write_text(json.dumps({"enum": ["yes", "no", 42]}))
    status, lines, err = run(capsys, "--schema", str(schema), "--prompt", "Answer:",
                             "--tokenizer", str(tokenizer_path("llama3")))
    assert status == 0 and json.loads(lines[0]) in ["yes", "no", 42]
    assert "128,256 ids" in err


def test_a_local_model_directory(capsys, tmp_path):
    from pse.offline import random_model

    folder = tmp_path / "model"
    random_model(qwen().size, seed=4).save_pretrained(folder)
    shared = tokenizer_path("qwen3").parent
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(shared / name, folder / name)
    status, lines, err = run(capsys, "--schema", str(SCHEMA_FILE), "--prompt", "A character:",
                             "--model", str(folder), "--samples", "2", "--chat")
    assert status == 0, err
    for line in lines:
        jsonschema.validate(json.loads(line), SCHEMA)
    assert "Qwen2ForCausalLM" in err and "RANDOM" not in err
    assert "151,669 ids" in err  # the vocabulary of the directory's tokenizer


@pytest.mark.parametrize("case, message", [
    ("missing", "cannot read schema"),
    ("not json", "is not JSON"),
    ("unsupported", "uniqueItems"),
    ("no model dir", "neither a local directory nor a hub id"),
    ("negative temperature", "--temperature"),
    ("chat without a model", "--chat need the chat template"),
])
def test_bad_input_is_one_line_and_status_2(capsys, tmp_path, case, message):
    schema = tmp_path / "schema.json"
    args = ["--schema", str(schema), "--prompt", "x"]
    if case == "not json":
        schema.write_text("{oops")
    elif case == "unsupported":
        schema.write_text(json.dumps({"type": "array", "items": {"type": "integer"},
                                      "uniqueItems": True}))
    elif case != "missing":
        schema.write_text("{}")
    if case == "no model dir":
        args += ["--model", str(tmp_path / "nowhere")]
    if case == "negative temperature":
        args += ["--temperature", "-1"]
    if case == "chat without a model":
        schema.write_text(json.dumps({"enum": [1, 2]}))
        args += ["--chat", "--tokenizer", str(tokenizer_path("llama3"))]
    status, lines, err = run(capsys, *args)
    assert status == 2 and lines == []
    assert err.startswith("pse: error:") and message in err


def test_argument_errors_exit_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["generate", "--schema", "x.json", "--prompt", "p", "--samples", "0"])
    assert exit_info.value.code == 2
    assert ">= 1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main([])


def test_tool_calls(capsys, tmp_path):
    tools = [{"type": "function", "function": {"name": "pick", "parameters": {
        "type": "object", "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9},
                                         "ok": {"type": "boolean"}},
        "required": ["n", "ok"], "additionalProperties": False}}}]
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools))
    status, lines, err = run(capsys, "--tools", str(path), "--tool-choice", "required",
                             "--whitespace", "compact", "--no-parallel-tool-calls",
                             "--prompt", "Pick one:", "--samples", "2")
    assert status == 0, err
    assert re.search(r"^samples\s+2 \(2 complete, 2 valid", err, re.M)
    calls = re.findall(r"^call: pick (.*)$", err, re.M)
    assert len(calls) == 2
    for call in calls:
        jsonschema.validate(json.loads(call), tools[0]["function"]["parameters"])
    assert "\n".join(lines).count("<tool_call>\n{") == 2
    for bad, message in ((["--tool-format", "xml"], "unknown tool call format"),
                         (["--tool-choice", "nope"], "'nope'"),
                         (["--schema", str(SCHEMA_FILE)], "one of --schema")):
        status, _, err = run(capsys, "--tools", str(path), "--prompt", "x", *bad)
        assert status == 2 and message in err, err
