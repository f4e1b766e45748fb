"""The Cython extensions of pse; everything else is in pyproject.toml.

The core (pse/_core/*.pyx) is Cython. The modules that compile a structure (schema to
machine to tables: plain Python, much of it loops over dicts and lists) are compiled by Cython
too, from their unchanged .py source, for speed: an extension module is imported instead of
the .py beside it, so after editing one of them in a source tree, build again
(`python setup.py build_ext --inplace`; tests/conftest.py refuses to run on a stale build).

With GCC the compile path's modules (the Python ones and the core's that only compiles run)
are built guided by a profile: built once instrumented, run on tools/pgo_workload.py
(structures of the kinds users compile), and built again with the profile, which places the
code a compile runs together and the rest (most of what Cython generates: error handling)
apart, so a compile in a cold process fetches fewer lines of code (docs/performance.md has
the figures). Those modules are built twice (13 minutes on two cores instead of 6); PSE_PGO=0
builds without a profile (quicker, while editing), and any failure of the instrumented build or
of the training run falls back to the plain build, with a warning.

A module is built again only when what it is built from changed: build_temp/pse-built.json
keeps a digest of each one's C source (and headers) and build options, whether the profile
guided it, and the size and date of the file built (another build writing there makes it
stale), so a second `pip install .` of an unchanged tree builds nothing.

PSE_SANITIZE=address builds a debug core under AddressSanitizer (-O1 -g, bounds checks of the
C arrays by ASan); run Python with the ASan runtime preloaded, as .ci/asan does. It leaves the
Python modules uncompiled (their C is Cython's own, not ours to check).
"""

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from typing import Iterator

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.errors import BaseError, CCompilerError

MODULES = ["canonical", "structure", "stepper", "trie", "byte_kinds", "slices", "mask", "forced",
           "rules", "frozen", "automata", "key_names", "unicode_tables"]
# the core's modules that only compiles run (built guided by the profile too; the mask path's
# are not: a profile of masks over the workload's small vocabulary slows large masks)
CORE_COMPILE_MODULES = ["rules", "frozen", "automata", "key_names"]
# the compile path, from a JSON Schema or a grammar to the engine's tables
PYTHON_MODULES = ["automaton", "bnf", "bounded_cache", "cfg", "compiler", "counted_lengths", "engine",
                  "gbnf", "grammar", "json_spelling", "json_value", "lark_builder",
                  "lark_patterns", "lark_reader", "lark_syntax", "lark_terminals", "limits",
                  "machines", "products", "regex", "schema_types",
                  *(f"json_schema.{name}" for name in (
                      "common", "merge", "formats", "refs", "logic", "negation", "enums",
                      "strings", "string_sets", "numbers", "members", "objects", "names", "arrays",
                      "compile", "schema"))]

# the comment at the top of a .c in which Cython records the build's options and paths
CYTHON_METADATA = re.compile(rb"/\* BEGIN: Cython Metadata\n.*?\nEND: Cython Metadata \*/", re.S)
SANITIZE = os.environ.get("PSE_SANITIZE", "")
if SANITIZE not in ("", "address"):
    raise SystemExit(f"PSE_SANITIZE must be 'address' or empty, got {SANITIZE!r}")
if SANITIZE:
    compile_args = ["-O1", "-g", "-fno-omit-frame-pointer", f"-fsanitize={SANITIZE}"]
    link_args = [f"-fsanitize={SANITIZE}"]
else:
    compile_args, link_args = ["-O3"], []

extensions = [
    Extension(
        f"pse._core.{name}",
        [f"pse/_core/{name}.pyx"],
        include_dirs=[numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
    )
    for name in MODULES
]

if not SANITIZE:
    extensions += [Extension(f"pse.{name}", [f"pse/{name.replace('.', '/')}.py"],
                             extra_compile_args=compile_args)
                   for name in PYTHON_MODULES]

PGO = os.environ.get("PSE_PGO", "1")
if PGO not in ("0", "1"):
    raise SystemExit(f"PSE_PGO must be 0 or 1, got {PGO!r}")
ROOT = os.path.dirname(os.path.abspath(__file__))


class BuildExt(build_ext):
    """build_ext, with the PYTHON_MODULES and the CORE_COMPILE_MODULES built guided by a
    profile where the compiler is GCC (see the module's docstring)."""

    def finalize_options(self) -> None:
        super().finalize_options()
        if self.parallel is None:  # (pip asks for no -j: the extensions build in parallel)
            self.parallel = True
        # (setuptools builds under build_lib even with --inplace, clearing the flag while it
        # builds, then copies into the source tree: _train needs to know which was asked for)
        self.in_place = bool(self.inplace)

    def build_extensions(self) -> None:
        names = {*PYTHON_MODULES, *(f"_core.{name}" for name in CORE_COMPILE_MODULES)}
        guided = [e for e in self.extensions if e.name.split(".", 1)[1] in names]
        # what each module under build_lib was built from, and how (see build_extension)
        record_path = os.path.join(self.build_temp, "pse-built.json")
        self.record = _read_record(record_path)
        self.rebuild, self.force = bool(self.force), True  # (freshness is decided here)
        # (taken before _flags adds the profile's flags, which the pass name records)
        self.options = {e.name: self._options(e) for e in self.extensions}
        try:
            if SANITIZE or PGO == "0" or not guided or not self._is_gcc():
                self._build_pass(self.extensions, "plain")
                return
            self._build_pass([e for e in self.extensions if e not in guided], "plain")
            if not self.rebuild and all(self._built_as(e) == "guided" for e in guided):
                return
            # (on disk before the instrumented pass: a build killed in it must not leave its
            # modules recorded as guided)
            for ext in guided:
                self.record.pop(os.path.abspath(self.get_ext_fullpath(ext.name)), None)
            _write_record(record_path, self.record)
            profiles = os.path.abspath(os.path.join(self.build_temp, "pgo"))
            shutil.rmtree(profiles, ignore_errors=True)
            os.makedirs(profiles)
            try:
                with _flags(guided, [f"-fprofile-generate={profiles}"], ["-fprofile-generate"]):
                    self._build_pass(guided, "instrumented")
                self._train()
                with _flags(guided, [f"-fprofile-use={profiles}", "-fprofile-partial-training",
                                     "-Wno-missing-profile"], []):
                    self._build_pass(guided, "guided")
            except (BaseError, CCompilerError, OSError, subprocess.SubprocessError) as e:
                # (the build must not fail for want of a profile)
                print(f"warning: pse's profile-guided build failed ({e}); building without",
                      file=sys.stderr)
                self._build_pass(guided, "plain")
        finally:
            _write_record(record_path, self.record)

    def build_extension(self, ext: Extension) -> None:
        """Build one module, unless a plain pass finds it built from the same sources.

        Freshness goes by content, not by dates: pip builds in an isolated environment whose
        Cython, newly installed, writes every .c again (its own .pxd files are newer than
        them), so a second `pip install .` of an unchanged tree would build everything
        again, the profile-guided modules twice."""
        if self.build_pass == "plain" and not self.rebuild and self._built_as(ext) is not None:
            print(f"pse: {ext.name} is up to date", file=sys.stderr)
            # (newer than its sources: the copy an in-place build makes keeps this date, and
            # tests/conftest.py compares them)
            built = os.path.abspath(self.get_ext_fullpath(ext.name))
            os.utime(built)
            self.record[built][2:] = _stamp(built)
            return
        built = os.path.abspath(self.get_ext_fullpath(ext.name))
        self.record.pop(built, None)
        super().build_extension(ext)
        if self.build_pass != "instrumented":
            self.record[built] = [self._digest(ext), self.build_pass, *_stamp(built)]

    def _built_as(self, ext: Extension) -> str | None:
        """How the module under build_lib was built ("plain" or "guided"), if it was built
        from the sources `ext` has now and is the file this build wrote (not one another
        build, an older setup.py's, put there since); else None."""
        built = os.path.abspath(self.get_ext_fullpath(ext.name))
        entry = self.record.get(built)
        if entry is None or not os.path.exists(built) or entry[2:] != _stamp(built):
            return None
        return entry[1] if entry[0] == self._digest(ext) else None

    def _options(self, ext: Extension) -> str:
        """How a module is built: the compiler's command (CC and CFLAGS are in it) and the
        macros and libraries build_ext's -D, -U and -l set on it, the module's flags and
        macros, --debug, Python's version, and numpy's where the module includes its headers
        (their folder is a temporary one under pip: the version stands for it). Not the
        compiler's include and library folders: a venv adds its own (empty) include folder,
        and the vLLM and SGLang venvs of CI would build everything again."""
        compiler = self.compiler
        uses_numpy = numpy.get_include() in ext.include_dirs
        return json.dumps([*(getattr(compiler, name, None) for name in (
                               "compiler_so", "linker_so", "macros", "libraries")),
                           ext.extra_compile_args, ext.extra_link_args, ext.define_macros,
                           ext.undef_macros, ext.libraries, bool(self.debug), sys.version,
                           numpy.__version__ if uses_numpy else None, SANITIZE])

    def _digest(self, ext: Extension) -> str:
        """What a module is built from: its options and its sources' and headers' contents.
        Not the paths of the build environment: Cython writes the include folders (under
        pip's temporary environment) into a comment at the top of each .c, and headers live
        there."""
        h = hashlib.sha256(self.options[ext.name].encode())
        for path in [*ext.sources, *ext.depends]:
            with open(path, "rb") as f:
                text = CYTHON_METADATA.sub(b"", f.read(), count=1)
            h.update(os.path.basename(path).encode() + b"\0" + hashlib.sha256(text).digest())
        return h.hexdigest()

    def _build_pass(self, extensions: list, build_pass: str) -> None:
        everything, self.extensions, self.build_pass = self.extensions, extensions, build_pass
        try:
            super().build_extensions()
        finally:
            self.extensions = everything

    def _is_gcc(self) -> bool:
        try:
            version = subprocess.run([self.compiler.compiler_so[0], "--version"],
                                     capture_output=True, text=True, timeout=60).stdout
        except (AttributeError, IndexError, OSError, subprocess.SubprocessError):
            return False
        return "Free Software Foundation" in version

    def _train(self) -> None:
        """Run tools/pgo_workload.py on the instrumented build, where the package's Python
        files are: in the source tree with --inplace (the extensions copied there first),
        else under build_lib (build_py has put them there)."""
        if self.in_place:
            self.copy_extensions_to_source()
            where = ROOT
        else:
            where = os.path.abspath(self.build_lib)
        env = {**os.environ, "PYTHONHASHSEED": "0",  # (the same profile every build)
               "PYTHONPATH": os.pathsep.join(
                   [where, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "pgo_workload.py")],
                       check=True, env=env, cwd=where, timeout=600)


def _read_record(path: str) -> dict:
    try:
        with open(path) as f:
            record = json.load(f)
    except (OSError, ValueError):
        return {}
    if not isinstance(record, dict):
        return {}
    # (entries of another form, from an older setup.py or damaged, are dropped: rebuilt)
    return {path: entry for path, entry in record.items()
            if isinstance(entry, list) and len(entry) == 4
            and all(isinstance(x, str) for x in entry[:2])
            and all(isinstance(x, int) for x in entry[2:])}


def _stamp(path: str) -> list:
    """The size and modification time (ns) of a built module: which file the record is about."""
    st = os.stat(path)
    return [st.st_size, st.st_mtime_ns]


def _write_record(path: str, record: dict) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(record, f, indent=0, sort_keys=True)


@contextlib.contextmanager
def _flags(extensions: list, compile_flags: list, link_flags: list) -> Iterator[None]:
    """Extra compile and link flags on some extensions, for a `with` block."""
    before = [(e.extra_compile_args, e.extra_link_args) for e in extensions]
    for e in extensions:
        e.extra_compile_args = [*e.extra_compile_args, *compile_flags]
        e.extra_link_args = [*e.extra_link_args, *link_flags]
    try:
        yield
    finally:
        for e, (compile_args, link_args) in zip(extensions, before):
            e.extra_compile_args, e.extra_link_args = compile_args, link_args


# annotation_typing off: in .py source, annotations are documentation (Cython would otherwise
# refuse a numpy integer where `int` is annotated)
setup(ext_modules=cythonize(extensions, language_level=3,
                            compiler_directives={"annotation_typing": False}),
      cmdclass={"build_ext": BuildExt})
