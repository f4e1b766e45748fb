"""Constrain a sequence of tokens to a JSON Schema and watch the masks, without a model.

A tiny vocabulary stands in for a tokenizer; at every step the engine says which tokens may
come next, a "model" (here: a fixed preference list) picks one of them, and the engine
consumes it. Run: python examples/schema_masks.py
"""

import pse

schema = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 8},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "role": {"enum": ["admin", "user"]},
    },
    "required": ["name", "role"],
    "additionalProperties": False,
}

tokens = ['{"', "name", '":"', "Ada", "Lovelace", '","', "age", '":', "36", "360", ",",
          '"', "role", "admin", "user", '"}', "}", "<eos>"]
vocab = pse.Vocabulary.from_tokens(tokens, eos_token_ids=[len(tokens) - 1],
                                   special_token_ids=[len(tokens) - 1])
engine = pse.StructuringEngine(vocab)
engine.configure(schema)

# what our stand-in model would like to say, best first, at any step: it keeps trying "360",
# which the schema allows inside the name (up to 8 characters) but not as the age (0 to 120)
preference = ["360", "Lovelace", "Ada", "age", "36", "name", "role", "user", "admin"] + tokens

text = []
while not engine.is_finished:
    allowed = set(engine.allowed_token_ids().tolist())
    choice = next(vocab.lookup(t) if t != "<eos>" else len(tokens) - 1 for t in preference
                  if (vocab.lookup(t) if t != "<eos>" else len(tokens) - 1) in allowed)
    shown = ", ".join(sorted(repr(tokens[i]) for i in allowed))
    print(f"allowed: {shown}\n  -> {tokens[choice]!r}")
    engine.consume_token(choice)
    if choice != len(tokens) - 1:
        text.append(tokens[choice])

print("\ngenerated:", "".join(text))
