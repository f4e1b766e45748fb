"""Test configuration: hypothesis profiles and the location of ../shared."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", max_examples=100, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("PSE_SHARED", REPO_ROOT.parent / "shared"))
# The compile cache stays off in the tests even where PSE_CACHE_DIR is set (it names pse's
# cache folder for models too): tests/test_compile_cache.py turns it on where it tests it.
# PSE_COMPILE_CACHE=on (with PSE_CACHE_DIR) runs the suite with it.
os.environ.setdefault("PSE_COMPILE_CACHE", "off")

import pytest  # noqa: E402

TOKENIZER_NAMES = ("llama3", "qwen3", "gpt4o")


def _stale_extensions() -> list[str]:
    """Modules of this source tree's pse, when it is the one tested (an editable install),
    whose compiled extension is older than their source (.py, .pyx, the .pxd Cython reads
    beside it, or a .pxi the .pyx includes; see setup.py): the tests would run the old code.
    (An installed copy's file times say nothing.)"""
    import pse

    package = Path(pse.__file__).resolve().parent
    if package != REPO_ROOT / "pse":
        return []
    stale = []
    suffixes = ("py", "pyx", "pxd", "pxi")
    for source in [p for suffix in suffixes for p in package.rglob(f"*.{suffix}")]:
        stems = [source.stem] if source.suffix != ".pxi" else [
            pyx.stem for pyx in source.parent.glob("*.pyx")
            if f'include "{source.name}"' in pyx.read_text()]
        for built in [b for stem in stems for b in source.parent.glob(f"{stem}.*.so")]:
            if built.stat().st_mtime < source.stat().st_mtime:
                stale.append(source.name)
    return stale


_STALE = _stale_extensions()
if _STALE:
    raise pytest.UsageError(
        f"pse/{', '.join(_STALE)} changed after being compiled: run "
        "`python setup.py build_ext --inplace` (the tests would run the old code)")


def tokenizer_path(name: str) -> Path:
    """Path of a shared tokenizer.json; skips the test, saying why, when ../shared is absent
    or PSE_NO_REAL_TOKENIZERS is set (.ci/asan: under AddressSanitizer, building the prefix
    trie of a real tokenizer takes many minutes)."""
    if os.environ.get("PSE_NO_REAL_TOKENIZERS"):
        pytest.skip("PSE_NO_REAL_TOKENIZERS is set: real tokenizers are left out of this run")
    path = SHARED / "tokenizers" / name / "tokenizer.json"
    if not path.is_file():
        pytest.skip(f"{path} not found: set PSE_SHARED to the shared data folder")
    return path


_VOCABS: dict = {}


def shared_vocab(name: str):
    """A Vocabulary of a shared tokenizer, built once per test session."""
    from pse.vocabulary import Vocabulary

    if name not in _VOCABS:
        _VOCABS[name] = Vocabulary.from_file(tokenizer_path(name))
    return _VOCABS[name]
