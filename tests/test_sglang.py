"""pse.sglang: pse as SGLang's grammar backend, against SGLang's installed classes (its registry,
its backend factory, its grammar interface) with the shared Llama 3 tokenizer.

SGLang's full install needs a GPU; .ci/sglang installs the package without its dependencies
(plus the few its grammar modules import), which is what runs here. Skips where SGLang is not
importable."""

from __future__ import annotations

import json
import re
from types import SimpleNamespace

import pytest

pytest.importorskip("sglang.srt.constrained.base_grammar_backend",
                    reason="SGLang is not installed (.ci/sglang installs it)")
jsonschema = pytest.importorskip("jsonschema")
torch = pytest.importorskip("torch")

from conftest import tokenizer_path  # noqa: E402

PERSON = {"type": "object", "properties": {
    "name": {"type": "string", "minLength": 1, "maxLength": 12},
    "age": {"type": "integer", "minimum": 0, "maximum": 120}},
    "required": ["name", "age"], "additionalProperties": False}


@pytest.fixture(scope="module")
def tokenizer():
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_file=str(tokenizer_path("llama3")),
                                   eos_token="<|eot_id|>")


@pytest.fixture(scope="module")
def backend(tokenizer):
    """pse's backend as SGLang's own factory builds it for `--grammar-backend pse`."""
    from sglang.srt.constrained import base_grammar_backend

    import pse.sglang

    pse.sglang.register()
    patch = pytest.MonkeyPatch()
    # the server's runtime context names the backend; this is all the factory reads of it
    patch.setattr(base_grammar_backend, "get_exec",
                  lambda: SimpleNamespace(kernel=SimpleNamespace(grammar_backend="pse")))
    try:
        made = base_grammar_backend.create_grammar_backend(
            SimpleNamespace(constrained_json_disable_any_whitespace=False), tokenizer,
            len(tokenizer), {tokenizer.eos_token_id})
    finally:
        patch.undo()
    assert isinstance(made, pse.sglang.PseGrammarBackend)
    return made


def grammar(backend, kind, spec):
    """A request's grammar, as SGLang's grammar manager gets it: compiled on the backend's
    threads the first time, copied from its cache after."""
    value, hit = backend.get_cached_or_future_value((kind, spec), require_reasoning=False)
    if not hit:
        value = value.result()
        backend.set_cache((kind, spec), value)
        value = value.copy()
    return value


def test_registered_among_the_grammar_backends():
    from sglang.srt.arg_groups.choices import GRAMMAR_BACKEND_CHOICES
    from sglang.srt.constrained.base_grammar_backend import GRAMMAR_BACKEND_REGISTRY

    import pse.sglang

    pse.sglang.register()
    pse.sglang.register()  # idempotent
    assert GRAMMAR_BACKEND_CHOICES.count("pse") == 1
    assert GRAMMAR_BACKEND_REGISTRY["pse"] is pse.sglang.create_backend


def test_the_plugin_is_an_entry_point_when_installed():
    from importlib.metadata import PackageNotFoundError, distribution, entry_points

    try:
        installed = distribution("pse").locate_file("pse/sglang.py").exists()
    except PackageNotFoundError:
        installed = False
    if installed:
        plugins = {e.name: e.value for e in entry_points(group="sglang.srt.plugins")}
        assert plugins.get("pse") == "pse.sglang:plugin"


def run(backend, tokenizer, grammars, jump_forward=False, seed=0, steps=200, ending=30):
    """Decode a batch on random logits through SGLang's mask calls (allocate, batched fill of
    live rows, move, apply), each row's grammar accepting the argmax; with `jump_forward`, a
    row first takes the tokens its structure forces. From step `ending` on, EOS is favoured
    (it is taken where the structure allows it)."""
    from sglang.srt.constrained.base_grammar_backend import GrammarRow

    generator = torch.Generator().manual_seed(seed)
    outputs = [[] for _ in grammars]
    first = grammars[0]
    for step in range(steps):
        live = [i for i, g in enumerate(grammars) if not g.is_terminated()]
        if not live:
            break
        if jump_forward:
            for i in live:
                forced = grammars[i].try_jump_forward(tokenizer)
                if forced is not None:
                    for token in forced[0]:
                        grammars[i].accept_token(token)
                    outputs[i] += forced[0]
        mask = first.allocate_vocab_mask(len(tokenizer), len(grammars), "cpu")
        first.fill_vocab_mask_batched([GrammarRow(i, grammars[i]) for i in live], mask)
        mask = first.move_vocab_mask(mask, "cpu")
        logits = torch.randn(len(grammars), len(tokenizer), generator=generator)
        if step >= ending:  # a model that wants to end: free text would run on forever
            logits[:, tokenizer.eos_token_id] += 100
        first.apply_vocab_mask(logits, mask)
        for i in live:
            token = int(logits[i].argmax())
            grammars[i].accept_token(token)
            outputs[i].append(token)
    assert all(g.is_terminated() for g in grammars), "rows still open after the last step"
    eos = tokenizer.eos_token_id
    return [tokenizer.decode([t for t in out if t != eos]) for out in outputs]


@pytest.mark.parametrize("jump_forward", [False, True])
def test_a_batch_of_structures_decodes_to_valid_outputs(backend, tokenizer, jump_forward):
    tag = {"triggers": ["<function="], "structures": [
        {"begin": "<function=person>", "schema": PERSON, "end": "</function>"}]}
    kinds = [("json", json.dumps(PERSON)), ("regex", "[A-Z]{2}-[0-9]{3}"),
             ("ebnf", 'start: "yes" | "no"'), ("json", json.dumps(PERSON)),
             ("structural_tag", json.dumps(tag))]
    grammars = [grammar(backend, *k) for k in kinds]
    out = run(backend, tokenizer, grammars, jump_forward=jump_forward)
    jsonschema.validate(json.loads(out[0]), PERSON)
    assert re.fullmatch(r"[A-Z]{2}-[0-9]{3}", out[1])
    assert out[2] in ("yes", "no")
    jsonschema.validate(json.loads(out[3]), PERSON)
    for call in re.findall(r"<function=person>(.*?)</function>", out[4], re.S):
        jsonschema.validate(json.loads(call), PERSON)


def test_jump_forward_gives_the_canonical_tokens(tokenizer):
    import pse.sglang

    compact = pse.sglang.create_backend(
        SimpleNamespace(constrained_json_disable_any_whitespace=True), tokenizer,
        len(tokenizer), {tokenizer.eos_token_id})
    g = grammar(compact, "json", json.dumps({"type": "object", "properties": {
        "temperature": {"type": "number"}}, "required": ["temperature"],
        "additionalProperties": False}))
    forced, text = g.try_jump_forward(tokenizer)
    assert text == "" and g.jump_forward_str_state((forced, text)) == ("", -1)
    spelled = tokenizer.decode(forced)
    assert spelled.startswith('{"temperature')  # the '"' waits: '":' is one token
    assert forced == tokenizer.encode(spelled, add_special_tokens=False)  # canonical
    for token in forced:
        g.accept_token(token)
    g.jump_and_retokenize([], forced, -1)


def test_stop_tokens_rollback_and_a_refused_token(backend, tokenizer):
    eos = tokenizer.eos_token_id
    g = grammar(backend, "regex", "ab+")
    a, b = (tokenizer.convert_tokens_to_ids(t) for t in ("a", "b"))
    mask = g.allocate_vocab_mask(len(tokenizer), 2, "cpu")

    def allowed():
        g.reset_vocab_mask(mask)
        g.fill_vocab_mask(mask, 1)
        logits = torch.zeros(2, len(tokenizer))
        g.apply_vocab_mask(logits, mask)
        assert torch.all(logits[0] == 0)  # the other row is untouched
        return set(torch.nonzero(logits[1] == 0).flatten().tolist())

    assert a in allowed() and eos not in allowed()
    with pytest.raises(ValueError, match="not allowed"):
        g.accept_token(eos)
    g.accept_token(a)
    g.accept_token(b)
    assert eos in allowed() and b in allowed()
    g.accept_token(eos)
    assert g.is_terminated()
    g.rollback(2)
    allowed_now = allowed()
    assert not g.is_terminated() and b in allowed_now and not {a, eos} & allowed_now
    with pytest.raises(ValueError, match="not allowed"):
        g.accept_token(a)
    copy = g.copy()
    copy.accept_token(b)
    assert b in allowed() and eos not in allowed()  # the copy is a request of its own


def test_a_bad_request_is_an_invalid_grammar_with_the_reason(backend):
    from sglang.srt.constrained.base_grammar_backend import InvalidGrammarObject

    for key, message in [(("json", "{oops"), "not JSON"),
                         (("ebnf", 'root ::= "a" b'), "undefined rule 'b'"),
                         (("regex", "a(?<=b)"), "regex"),
                         (("json", json.dumps({"type": "array", "uniqueItems": True,
                                               "items": {"type": "integer"}})), "uniqueItems")]:
        value = grammar(backend, *key)
        assert isinstance(value, InvalidGrammarObject), key
        assert message in value.error_message, (key, value.error_message)


def test_the_cache_of_grammars_is_bounded(backend):
    import pse.sglang

    for k in range(pse.sglang.CACHED_STRUCTURES + 5):
        grammar(backend, "regex", f"a{{{k}}}")
    assert len(backend.cache) == pse.sglang.CACHED_STRUCTURES
    backend.reset()
    assert len(backend.cache) == 0
