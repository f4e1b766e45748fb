"""pse as a vLLM structured-outputs backend: `response_format`, `tools` and
`structured_outputs` requests constrained by pse, beside xgrammar, guidance and outlines.

    python -m vllm.entrypoints.openai.api_server --model DIR \
        --structured-outputs-config.backend pse
    pse.vllm_backend.register()  # offline: before LLM(...)
    LLM(model=..., structured_outputs_config={"backend": "pse"})

vLLM chooses among its backends with a fixed list, so the `vllm.general_plugins` entry point
(installed with pse's `vllm` extra, run by vLLM in each of its processes) calls `register()`,
which adds "pse" to that list: the backend setting accepts it, requests are checked by pse when
they arrive (a structure that does not compile is an HTTP 400), and the engine builds pse's
backend for them. It changes nothing unless the backend is "pse". It knows the vLLM releases in
`SUPPORTED_VLLM` and leaves any other alone (a warning says so). Offline, `LLM(...)` reads its
structured-outputs setting before vLLM loads plugins: call `register()` first.

JSON is written with flexible whitespace, bounded (vLLM's default), or compact with
`--structured-outputs-config.disable_any_whitespace true`. A grammar is read as GBNF where its
rules are written `name ::= ...`, else as Lark. Structural tags are read in XGrammar's form with one trigger.
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
from dataclasses import dataclass, field
from typing import Any

import torch
from vllm.v1.structured_output.backend_types import (
    StructuredOutputBackend, StructuredOutputGrammar, StructuredOutputOptions,
)

from pse.serving import (
    RequestError, ServedGrammar, StructureCache, check_structure, standard_structure,
    vocabulary_of,
)

logger = logging.getLogger(__name__)

SUPPORTED_VLLM = ("0.32",)
"""The vLLM releases (major.minor) whose structured-outputs internals `register` knows."""

BACKEND = "pse"
_CONFIG_CHECK = "_validate_structured_output_config"


class UnsupportedVLLM(RuntimeError):
    """The installed vLLM is not one `register` knows; nothing was changed."""


def register() -> None:
    """Offer "pse" as vLLM's structured-outputs backend (idempotent).

    Raises:
        UnsupportedVLLM: the installed vLLM is not in SUPPORTED_VLLM, or its internals are
            not those this release knows; vLLM is left unchanged.
    """
    import vllm

    version = ".".join(vllm.__version__.split(".")[:2])
    if version not in SUPPORTED_VLLM:
        raise UnsupportedVLLM(f"pse's structured-outputs backend supports vLLM "
                              f"{', '.join(SUPPORTED_VLLM)}; this is vLLM {vllm.__version__}. "
                              f"The logits processor pse.vllm:StructuringLogitsProcessor works "
                              f"with any vLLM V1.")
    with _LOCK:
        if not _REGISTERED:
            targets = _targets()
            _patch(*targets)
            _REGISTERED.append(True)


def plugin() -> None:
    """The `vllm.general_plugins` entry point: `register`, or a warning where this vLLM is
    not supported (a plugin must not stop vLLM from starting)."""
    try:
        register()
    except UnsupportedVLLM as e:
        logger.warning("pse: the 'pse' structured-outputs backend is not offered: %s", e)


_LOCK = threading.Lock()
_REGISTERED: list[bool] = []


def _targets() -> tuple:
    """What `register` changes, checked against the shapes this release knows."""
    import vllm.config.structured_outputs as config
    from vllm.sampling_params import SamplingParams
    from vllm.v1.structured_output import StructuredOutputManager

    expected = {
        (SamplingParams, "_validate_structured_outputs"):
            ["self", "model_config", "structured_outputs_config", "tokenizer"],
        (StructuredOutputManager, "grammar_init"): ["self", "request"],
    }
    for (owner, name), parameters in expected.items():
        method = getattr(owner, name, None)
        if method is None or list(inspect.signature(method).parameters) != parameters:
            raise UnsupportedVLLM(f"{owner.__name__}.{name} is not the one pse knows "
                                  f"(parameters {parameters})")
    cls = config.StructuredOutputsConfig
    fields = getattr(cls, "__dataclass_fields__", {})
    validators = getattr(getattr(cls, "__pydantic_decorators__", None), "model_validators", {})
    if ("backend" not in fields or "disable_any_whitespace" not in fields
            or not hasattr(config, "StructuredOutputsBackend") or _CONFIG_CHECK not in validators):
        raise UnsupportedVLLM("StructuredOutputsConfig is not the one pse knows")
    return config, SamplingParams, StructuredOutputManager


def _patch(config: Any, sampling_params: type, manager: type) -> None:
    from typing import Literal, get_args

    import pydantic

    # the backend setting: one more value in its Literal
    names = get_args(config.StructuredOutputsBackend)
    if BACKEND not in names:
        backends = Literal[names + (BACKEND,)]
        config.StructuredOutputsBackend = backends
        cls = config.StructuredOutputsConfig
        cls.__dataclass_fields__["backend"].type = backends
        cls.__annotations__["backend"] = backends
        # disable_any_whitespace: also for pse (compact JSON)
        check = cls.__pydantic_decorators__.model_validators[_CONFIG_CHECK]
        refuse = check.func

        def check_config(self):
            if self.backend == BACKEND and not self.disable_additional_properties:
                return self
            return refuse(self)

        check.func = check_config
        pydantic.dataclasses.rebuild_dataclass(cls, force=True)
        # the engine's configuration validates the setting again, with its own schema of it
        from vllm.config import VllmConfig

        pydantic.dataclasses.rebuild_dataclass(VllmConfig, force=True)

    # requests: checked by pse when the backend is pse
    validate = sampling_params._validate_structured_outputs

    @functools.wraps(validate)
    def validate_structured_outputs(self, model_config, structured_outputs_config, tokenizer):
        if (structured_outputs_config is None or self.structured_outputs is None
                or structured_outputs_config.backend != BACKEND):
            return validate(self, model_config, structured_outputs_config, tokenizer)
        _check(self, tokenizer)

    sampling_params._validate_structured_outputs = validate_structured_outputs

    # the engine: builds pse's backend for the first structured request
    grammar_init = manager.grammar_init

    @functools.wraps(grammar_init)
    def init(self, request):
        if (self.backend is None and request.structured_output_request is not None
                and request.sampling_params.structured_outputs._backend == BACKEND):
            self.backend = PseBackend(self.vllm_config, tokenizer=self.tokenizer,
                                      vocab_size=self.vllm_config.model_config.get_vocab_size())
        return grammar_init(self, request)

    manager.grammar_init = init


def _check(params: Any, tokenizer: Any) -> None:
    """Refuse a request whose structure pse cannot build (an HTTP 400 from the server)."""
    from vllm.exceptions import VLLMValidationError
    from vllm.v1.structured_output.request import get_structured_output_key

    outputs = params.structured_outputs
    if tokenizer is None:
        raise VLLMValidationError("structured outputs need a tokenizer "
                                  "(not 'skip_tokenizer_init')")
    if outputs._backend not in (None, BACKEND):
        raise VLLMValidationError(f"the request asks for the backend {outputs._backend!r}; "
                                  f"this server uses {BACKEND!r}")
    outputs._backend = BACKEND
    kind, spec = get_structured_output_key(outputs)
    try:
        check_structure(*_structure(kind, spec))
    except RequestError as e:
        raise VLLMValidationError(f"pse: {e}") from None
    outputs.__post_init__()


def _structure(kind: StructuredOutputOptions, spec: str, whitespace: str = "flexible"
               ) -> tuple:
    """vLLM's kind of request as pse's standard structure."""
    return standard_structure(kind.name.lower(), spec, whitespace)


@dataclass
class PseBackend(StructuredOutputBackend):
    """vLLM's engine-level backend: the model's vocabulary (built in the compile thread of
    the first request, not in the engine's step) and the cache of compiled structures."""

    _cache: StructureCache | None = field(default=None, init=False)
    _lock: Any = field(default_factory=threading.Lock, init=False)

    def compile_grammar(self, request_type: StructuredOutputOptions, grammar_spec: str,
                        stop_token_ids: set[int] | None = None) -> PseGrammar:
        with self._lock:
            if self._cache is None:
                self._cache = StructureCache(vocabulary_of(self.tokenizer, self.vocab_size))
        config = getattr(self.vllm_config, "structured_outputs_config", None)
        compact = bool(getattr(config, "disable_any_whitespace", False))
        engine = self._cache.compiled(*_structure(request_type, grammar_spec,
                                                  "compact" if compact else "flexible"))
        return PseGrammar(ServedGrammar(engine, stop_token_ids))

    def allocate_token_bitmask(self, max_num_seqs: int) -> torch.Tensor:
        return torch.full((max_num_seqs, (self.vocab_size + 31) // 32), -1, dtype=torch.int32)

    def destroy(self) -> None:
        self._cache = None


class PseGrammar(StructuredOutputGrammar):
    """vLLM's request-level grammar over one request's pse engine."""

    def __init__(self, served: ServedGrammar) -> None:
        self.served = served
        self._start = served.copy()

    def accept_tokens(self, request_id: str, tokens: list[int]) -> bool:
        for n, token in enumerate(tokens):
            if not self.served.accept(token):
                logger.warning("pse: request %s: token %d is refused by its structure",
                               request_id, token)
                self.served.rollback(n)
                return False
        return True

    def validate_tokens(self, tokens: list[int]) -> list[int]:
        tokens = [t for t in tokens if t >= 0]  # speculative padding
        return tokens[:self.served.accept_prefix(tokens)]

    def rollback(self, num_tokens: int) -> None:
        self.served.rollback(num_tokens)

    def fill_bitmask(self, bitmask: torch.Tensor, batch_index: int) -> None:
        self.served.engine.fill_next_token_bitmask(bitmask, batch_index)
        self.served.fix_stops(bitmask[batch_index].numpy())

    def is_terminated(self) -> bool:
        return self.served.terminated

    def reset(self) -> None:
        self.served = self._start.copy()
