"""pse.torch: bitmasks on tensors, samplers, `sample`, and the transformers logits processor."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from lm import qwen, qwen_model, small_qwen, torch  # noqa: F401  (skips without torch)

import pse  # noqa: E402
from pse.torch import (  # noqa: E402
    StructuringLogitsProcessor,
    _refused_on_device,
    allocate_token_bitmask,
    apply_token_bitmask_inplace,
    greedy,
    multinomial,
    sample,
    sampling,
    top_k,
    top_p,
)

jsonschema = pytest.importorskip("jsonschema")

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def brute_force_allowed(bitmask: np.ndarray, width: int) -> np.ndarray:
    """Per row and column: is bit c % 32 of word c // 32 set (False past the mask)."""
    out = np.zeros((bitmask.shape[0], width), dtype=bool)
    for r in range(bitmask.shape[0]):
        for c in range(min(width, bitmask.shape[1] * 32)):
            out[r, c] = (int(bitmask[r, c // 32]) >> (c % 32)) & 1 == 1
    return out


def test_import_pse_does_not_import_torch():
    code = "import sys, pse; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            cwd=pse.__path__[0] + "/..")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_allocate_token_bitmask():
    mask = allocate_token_bitmask(3, 65)
    assert mask.dtype == torch.int32 and tuple(mask.shape) == (3, 3)
    assert bool((mask == -1).all())
    for bad in [(0, 10), (2, 0), (True, 10), (2, 3.5)]:
        with pytest.raises(ValueError):
            allocate_token_bitmask(*bad)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("width", [70, 96, 131], ids=lambda w: f"logits{w}")
def test_apply_token_bitmask_inplace_matches_brute_force(dtype, width):
    rng = np.random.default_rng(width)
    bitmask = rng.integers(-2**31, 2**31, size=(3, 3), dtype=np.int64).astype(np.int32)
    logits = torch.randn(3, width).to(dtype)
    before = logits.clone()
    apply_token_bitmask_inplace(logits, torch.from_numpy(bitmask))
    allowed = torch.from_numpy(brute_force_allowed(bitmask, width))
    # allowed logits untouched, every other one -inf (also past the 96 bits the mask covers)
    assert torch.equal(logits[allowed], before[allowed])
    assert bool(torch.isneginf(logits[~allowed]).all())
    assert logits.dtype == dtype


def test_apply_token_bitmask_one_row_and_numpy_mask():
    bitmask = np.array([0b1010, 1 << 31], dtype=np.uint32).view(np.int32)
    logits = torch.zeros(40)
    apply_token_bitmask_inplace(logits, bitmask)
    assert torch.isfinite(logits).nonzero().flatten().tolist() == [1, 3]  # bit 63 is past 40


def test_apply_token_bitmask_on_a_strided_view():
    logits = torch.zeros(2, 64)
    view = logits[:, :40]  # not contiguous: rows have stride 64
    bitmask = torch.tensor([[1, 0], [2, 0]], dtype=torch.int32)
    apply_token_bitmask_inplace(view, bitmask)
    assert torch.isfinite(view).nonzero().tolist() == [[0, 0], [1, 1]]
    assert bool((logits[:, 40:] == 0).all())  # outside the view nothing changed


def test_device_path_matches_the_cpu_path():
    # the accelerator code path, run on CPU tensors: the same bits as numpy's unpacking
    rng = np.random.default_rng(7)
    bitmask = rng.integers(-2**31, 2**31, size=(4, 5), dtype=np.int64).astype(np.int32)
    refused = _refused_on_device(torch.from_numpy(bitmask), 150)
    assert torch.equal(refused, torch.from_numpy(~brute_force_allowed(bitmask, 150)))


def test_apply_token_bitmask_errors():
    with pytest.raises(TypeError):
        apply_token_bitmask_inplace(torch.zeros(4, dtype=torch.int64), torch.zeros(1, dtype=torch.int32))
    with pytest.raises(TypeError):
        apply_token_bitmask_inplace(np.zeros(4), torch.zeros(1, dtype=torch.int32))
    with pytest.raises(ValueError, match="int32"):
        apply_token_bitmask_inplace(torch.zeros(4), torch.zeros(1, dtype=torch.int64))
    with pytest.raises(ValueError, match="rows"):
        apply_token_bitmask_inplace(torch.zeros(2, 4), torch.zeros(3, 1, dtype=torch.int32))
    with pytest.raises(ValueError, match="both"):
        apply_token_bitmask_inplace(torch.zeros(2, 4), torch.zeros(1, dtype=torch.int32))


# -- samplers ---------------------------------------------------------------------------------
def masked_logits() -> torch.Tensor:
    logits = torch.tensor([0.5, 2.0, float("-inf"), 1.0, float("-inf"), 0.0])
    return logits


def test_greedy():
    assert greedy(masked_logits()) == 1


def frequencies(sampler, n: int = 6000) -> np.ndarray:
    counts = np.bincount([sampler(masked_logits()) for _ in range(n)], minlength=6)
    return counts / n


def within_sampling_error(observed: np.ndarray, expected: np.ndarray, n: int = 6000) -> bool:
    sigma = np.sqrt(expected * (1 - expected) / n)
    return bool(np.all(np.abs(observed - expected) <= 5 * sigma + 1e-12))


def test_multinomial_follows_the_softmax_and_never_picks_masked_tokens():
    generator = torch.Generator().manual_seed(0)
    observed = frequencies(multinomial(1.0, generator))
    expected = torch.softmax(masked_logits(), 0).numpy()
    assert observed[2] == observed[4] == 0
    assert within_sampling_error(observed, expected)
    cold = frequencies(multinomial(0.25, generator))
    assert within_sampling_error(cold, torch.softmax(masked_logits() / 0.25, 0).numpy())


def test_top_k_draws_from_the_k_best_only():
    generator = torch.Generator().manual_seed(1)
    observed = frequencies(top_k(2, generator=generator))
    best = torch.tensor([float("-inf"), 2.0, float("-inf"), 1.0, float("-inf"), float("-inf")])
    assert within_sampling_error(observed, torch.softmax(best, 0).numpy())
    assert set(np.flatnonzero(frequencies(top_k(100, generator=generator)))) == {0, 1, 3, 5}


def test_top_p_draws_from_the_nucleus():
    generator = torch.Generator().manual_seed(2)
    probs = torch.softmax(masked_logits(), 0)  # 1: .53, 3: .20, 0: .16, 5: .10
    observed = frequencies(top_p(0.7, generator=generator))
    nucleus = torch.zeros(6)
    nucleus[[1, 3]] = probs[[1, 3]]
    assert within_sampling_error(observed, (nucleus / nucleus.sum()).numpy())
    assert set(np.flatnonzero(frequencies(top_p(0.1, generator=generator)))) == {1}


def hf_distribution(temperature, k, p, min_p) -> np.ndarray:
    """The distribution `transformers`' own logits warpers give (the oracle of `sampling`)."""
    from transformers import (MinPLogitsWarper, TemperatureLogitsWarper, TopKLogitsWarper,
                              TopPLogitsWarper)

    scores = masked_logits().view(1, -1)
    warpers = [TemperatureLogitsWarper(temperature)]
    warpers += [TopKLogitsWarper(k)] if k else []
    warpers += [TopPLogitsWarper(p)] if p else []
    warpers += [MinPLogitsWarper(min_p)] if min_p else []
    for warper in warpers:
        scores = warper(None, scores)
    return torch.softmax(scores[0], 0).numpy()


@pytest.mark.parametrize("temperature, k, p, min_p", [
    (1.0, None, None, None), (0.5, None, None, None), (1.0, 3, None, None),
    (1.0, None, 0.7, None), (1.0, None, None, 0.3), (2.0, 3, 0.9, None),
    (1.5, 4, 0.95, 0.2), (0.8, None, 0.5, 0.1),
])
def test_sampling_follows_transformers_warpers(temperature, k, p, min_p):
    draw = sampling(temperature, top_k=k, top_p=p, min_p=min_p, seed=7)
    expected = hf_distribution(temperature, k, p, min_p)
    observed = frequencies(draw)
    assert observed[expected == 0].sum() == 0, "a token outside the kept set was drawn"
    assert within_sampling_error(observed, expected)


def test_sampling_greedy_and_seeds():
    assert sampling(0) is greedy
    assert sampling(0, top_k=3, top_p=0.5) is greedy
    runs = [[sampling(1.0, seed=s)(masked_logits()) for _ in range(50)] for s in (3, 3, 4)]
    assert runs[0] == runs[1] != runs[2]
    generator = torch.Generator().manual_seed(5)
    assert sampling(1.0, generator=generator)(masked_logits()) in (0, 1, 3, 5)
    with pytest.raises(ValueError, match="not both"):
        sampling(1.0, seed=1, generator=generator)


@pytest.mark.parametrize("kwargs", [dict(temperature=-0.1), dict(temperature="1"),
                                    dict(top_k=0), dict(top_k=2.5), dict(top_p=0),
                                    dict(top_p=1.2), dict(min_p=-0.1), dict(min_p=1.5),
                                    dict(top_p=True)])
def test_sampling_arguments_are_checked(kwargs):
    with pytest.raises(ValueError):
        sampling(**kwargs)


@pytest.mark.parametrize("make", [lambda: multinomial(0), lambda: multinomial(-1.0),
                                  lambda: top_k(0), lambda: top_p(0), lambda: top_p(1.5),
                                  lambda: top_k(3, temperature=0)])
def test_sampler_arguments_are_checked(make):
    with pytest.raises(ValueError):
        make()


# -- sample(): mask, sample, commit, fast-forward ---------------------------------------------
TOY = ["{", "}", '"', "a", "b", '"a', '{"', '":', "1", "2", ",", "ab", "<eos>"]


def toy_engine(structure) -> pse.StructuringEngine:
    vocab = pse.Vocabulary.from_tokens(TOY, eos_token_ids=[12], special_token_ids=[12])
    engine = pse.StructuringEngine(vocab)
    engine.configure(structure)
    return engine


def prefer(*tokens: str, width: int = len(TOY)) -> torch.Tensor:
    """Logits ranking `tokens` first, in that order."""
    logits = torch.zeros(width)
    for rank, token in enumerate(tokens):
        logits[TOY.index(token) if token in TOY else 12] = 10.0 - rank
    return logits


def test_sample_greedy_takes_the_best_allowed_token():
    engine = toy_engine(pse.Phrase("a") + pse.Character("12", max_length=3))
    # "1" is preferred but not allowed first; "a" is the best allowed
    assert sample(engine, prefer("1", "a"), fast_forward=False) == [TOY.index("a")]
    assert sample(engine, prefer("b", "2"), fast_forward=False) == [TOY.index("2")]
    assert engine.is_accepting()  # "a2" is complete
    assert sample(engine, prefer("<eos>")) == [12]
    assert engine.is_finished
    with pytest.raises(ValueError, match="finished"):
        sample(engine, prefer("1"))


def test_sample_appends_the_forced_tokens():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"],
              "additionalProperties": False}
    engine = toy_engine(schema)
    ids = sample(engine, prefer("{"))
    assert engine.vocab.decode(ids).startswith("{")
    assert len(ids) > 1, "the schema forces the key after the brace"
    assert engine.vocab.decode(ids) == '{"a":'[: len(engine.vocab.decode(ids))]
    # the engine committed everything it returned
    rest = sample(engine, prefer("1"))
    assert engine.vocab.decode(ids + rest).startswith('{"a":1')


def test_sample_masks_the_logits_in_place_and_accepts_wider_logits():
    engine = toy_engine(pse.Phrase("ab"))
    logits = prefer("b", width=40)
    assert sample(engine, logits, fast_forward=False) in ([TOY.index("a")], [TOY.index("ab")])
    allowed = torch.isfinite(logits).nonzero().flatten().tolist()
    assert allowed == [TOY.index("a"), TOY.index("ab")]


def test_a_sampler_that_ignores_the_mask_is_healed():
    engine = toy_engine(pse.Phrase("a") + pse.Phrase('"'))
    # "ab" overshoots: the structure takes its "a" only; healing commits the token "a"
    ids = sample(engine, prefer("1"), sampler=lambda logits: TOY.index("ab"), fast_forward=False)
    assert ids == [TOY.index("a")]
    assert engine.vocab.decode(sample(engine, prefer('"'), fast_forward=False)) == '"'


def test_a_refused_token_is_never_committed():
    engine = toy_engine(pse.Phrase("a") + pse.Phrase("1"))
    with pytest.raises(ValueError, match="refuses"):
        sample(engine, prefer("a"), sampler=lambda logits: TOY.index("2"))
    with pytest.raises(ValueError, match="refuses"):
        sample(engine, prefer("a"), sampler=lambda logits: 12)  # EOS before the end
    with pytest.raises(ValueError, match="outside"):
        sample(engine, prefer("a"), sampler=lambda logits: 99)
    with pytest.raises(TypeError):
        sample(engine, prefer("a"), sampler=lambda logits: "a")
    # nothing was committed by the refusals
    assert sample(engine, prefer("a"), fast_forward=False) == [TOY.index("a")]


def test_sample_checks_the_logits():
    engine = toy_engine(pse.Phrase("a"))
    with pytest.raises(ValueError, match="columns"):
        sample(engine, torch.zeros(5))
    with pytest.raises(ValueError, match="shape"):
        sample(engine, torch.zeros(2, len(TOY)))


# -- the logits processor inside model.generate -----------------------------------------------
SCHEMA = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "minimum": 0, "maximum": 999},
        "kind": {"enum": ["book", "film", "song"]},
        "title": {"type": "string", "minLength": 1, "maxLength": 12},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 6}, "maxItems": 2},
        "score": {"type": "number", "minimum": 0, "maximum": 5},
    },
    "required": ["id", "kind", "title", "tags"],
    "additionalProperties": False,
}


def processor_run(do_sample: bool, batch: int = 4):
    from transformers import LogitsProcessorList

    vocab = qwen()
    engine = pse.StructuringEngine(vocab)
    engine.configure(SCHEMA)
    processor = StructuringLogitsProcessor(engine)
    prompts = ["An item as JSON:", "Item:", "Give me JSON for a song", "A film:"][:batch]
    encoded = [vocab.encode(p) for p in prompts]
    width = max(map(len, encoded))
    pad = vocab.eos_token_ids[0]
    # left padding, as decoder-only batches need
    input_ids = torch.tensor([[pad] * (width - len(e)) + e for e in encoded])
    attention = torch.tensor([[0] * (width - len(e)) + [1] * len(e) for e in encoded])
    torch.manual_seed(3)
    out = qwen_model().generate(
        input_ids=input_ids, attention_mask=attention, max_new_tokens=80, do_sample=do_sample,
        logits_processor=LogitsProcessorList([processor]), pad_token_id=pad,
        eos_token_id=list(vocab.eos_token_ids), top_k=None, top_p=None, temperature=None)
    return vocab, processor, out[:, width:].tolist()


@pytest.mark.parametrize("do_sample", [False, True], ids=["greedy", "sampling"])
def test_logits_processor_in_model_generate_batch_4(do_sample):
    vocab, processor, rows = processor_run(do_sample)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    eos = set(vocab.eos_token_ids)
    texts = []
    for row, engine in zip(rows, processor.rows):
        assert any(t in eos for t in row), "every row ends with EOS within max_new_tokens"
        end = next(i for i, t in enumerate(row) if t in eos)
        assert all(t in eos for t in row[end:]), "after EOS only padding"
        text = vocab.decode(row[:end])
        validator.validate(json.loads(text))
        # the EOS that ends the generation is never shown to the processor
        assert engine.is_accepting()
        texts.append(text)
    assert len(set(texts)) > 1, "rows are independent"


def test_logits_processor_refuses_a_second_generation_without_reset():
    engine = pse.StructuringEngine(small_qwen())
    engine.configure(SCHEMA)
    processor = StructuringLogitsProcessor(engine)
    width = small_qwen().size
    scores = torch.zeros(2, width)
    processor(torch.tensor([[1, 2], [3, 4]]), scores)
    allowed = torch.isfinite(scores[0]).nonzero().flatten().tolist()
    assert [small_qwen().decode([t]) for t in allowed] and all(
        small_qwen().decode([t]).startswith("{") for t in allowed)
    with pytest.raises(ValueError, match="reset"):
        processor(torch.tensor([[1, 2], [3, 4]]), torch.zeros(2, width))
    refused = small_qwen().encode("x")[0]
    with pytest.raises(ValueError, match="not allowed"):
        processor(torch.tensor([[1, 2, refused], [3, 4, refused]]), torch.zeros(2, width))
    processor.reset()
    processor(torch.tensor([[5]]), torch.zeros(1, width))
    assert len(processor.rows) == 1
    with pytest.raises(TypeError):
        StructuringLogitsProcessor("not an engine")
    with pytest.raises(RuntimeError, match="configure"):
        StructuringLogitsProcessor(pse.StructuringEngine(small_qwen()))


def test_logits_processor_eos_and_padding_after_a_row_ends():
    vocab = small_qwen()
    engine = pse.StructuringEngine(vocab)
    engine.configure(pse.Phrase("7"))  # (the schema {"const": 7} would go on: 7.0 equals 7)
    processor = StructuringLogitsProcessor(engine)
    seven, eos, pad = vocab.encode("7")[0], vocab.eos_token_ids[0], 0

    def allowed(ids):
        scores = torch.zeros(1, vocab.size + 40)  # logits padded past the vocabulary
        processor(torch.tensor([ids]), scores)
        return torch.isfinite(scores[0]).nonzero().flatten().tolist()

    assert allowed([5]) == [seven]  # the prompt is not committed
    assert allowed([5, seven]) == [eos]  # complete: EOS only
    assert allowed([5, seven, eos]) == [eos] and processor.rows[0].is_finished
    # transformers pads a finished row; the padding is not committed, EOS stays allowed
    assert allowed([5, seven, eos, pad]) == [eos]
    assert allowed([5, seven, eos, pad, pad]) == [eos]
