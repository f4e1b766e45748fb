"""A tool-calling loop: the model calls Python functions, their results go back into the
conversation, and the model answers.

`pse.ToolCalls` makes every call exact: a tool that exists, arguments that validate against
its schema (made from the function's signature and docstring by `pse.tool_schema`), in the
Hermes format Qwen's chat template describes. `Generation.outputs` gives the calls back as
(tool name, arguments).

With `--model DIR` (a local Qwen2.5 / Qwen3 / Hermes model directory) the loop is the real
thing: the model decides whether to call, and answers with the results. Without it, it runs
offline on a small model with random weights and Qwen's vocabulary: the first turn must call
a tool (tool_choice="required"), and its arguments, though valid, mean nothing.

Run: python examples/agent.py [--model DIR]    (needs: pip install torch ".[hf]")
"""

from __future__ import annotations

import argparse
import json
from typing import Literal

import torch

import pse
from pse.torch import greedy, multinomial


def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict:
    """The current weather in a city.

    Args:
        city: the city's name, in English.
        unit: the temperature's unit.
    """
    return {"city": city, "temperature": 21 if unit == "celsius" else 70, "sky": "clear"}


def convert_currency(amount: float, source: str, target: str) -> float:
    """Convert an amount of money between currencies.

    Args:
        amount: how much.
        source: the currency of the amount, an ISO 4217 code such as "EUR".
        target: the currency to convert to.
    """
    return round(amount * 1.08, 2)


FUNCTIONS = {f.__name__: f for f in (get_weather, convert_currency)}
TOOLS = [pse.tool_schema(f) for f in FUNCTIONS.values()]


def chat_prompt(tokenizer, messages: list[dict]) -> list[int]:
    """The conversation in the model's chat template, with the tools, assistant turn open."""
    if getattr(tokenizer, "chat_template", None):
        encoded = tokenizer.apply_chat_template(messages, tools=TOOLS, tokenize=True,
                                                add_generation_prompt=True)
        return list(encoded["input_ids"] if hasattr(encoded, "keys") else encoded)
    # no template (the offline vocabulary): Qwen's layout, written out
    text = "<|im_start|>system\nTools:\n" + "\n".join(json.dumps(t) for t in TOOLS)
    for m in messages:
        content = m.get("content") or json.dumps(m.get("tool_calls"))
        text += f"<|im_end|>\n<|im_start|>{m['role']}\n{content}"
    return tokenizer.encode(text + "<|im_end|>\n<|im_start|>assistant\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a local Hugging Face model directory")
    parser.add_argument("--question", default="What is the weather in Lisbon, in celsius?")
    args = parser.parse_args()
    if args.model:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(args.model, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(args.model, local_files_only=True)
        vocab = pse.Vocabulary.from_tokenizer(tokenizer)
        first_choice, sampler = "auto", greedy
    else:
        from pse.offline import qwen_vocabulary, random_model

        torch.set_num_threads(1)
        tokenizer = vocab = qwen_vocabulary()
        model = random_model(vocab.size, seed=0)
        first_choice = "required"  # random weights would ramble on in free text ...
        for tool in TOOLS:         # ... and in strings: bound them, so that calls complete
            for prop in tool["function"]["parameters"]["properties"].values():
                if prop.get("type") == "string":
                    prop["maxLength"] = 16
        sampler = multinomial(temperature=1.0, generator=torch.Generator().manual_seed(0))

    messages = [{"role": "user", "content": args.question}]
    for turn in range(3):
        choice = first_choice if turn == 0 else "auto"
        engine = pse.StructuringEngine(vocab)
        engine.configure(pse.ToolCalls(TOOLS, tool_choice=choice,
                                       whitespace="flexible" if args.model else "compact"))
        result = pse.generate(model, tokenizer, chat_prompt(tokenizer, messages), engine,
                              max_new_tokens=96, sampler=sampler)
        print(f"assistant ({result.stats.tokens} tokens, {result.stats.forced_tokens} "
              f"forced): {result.text!r}")
        calls = [(name, args) for name, args in result.outputs]
        if not calls:
            break
        messages.append({"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": name, "arguments": arguments}}
            for name, arguments in calls]})
        for name, arguments in calls:
            output = FUNCTIONS[name](**arguments)
            print(f"  {name}({arguments}) -> {output}")
            messages.append({"role": "tool", "content": json.dumps(output)})


if __name__ == "__main__":
    main()
