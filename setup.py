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
the figures). Those modules are built twice (about two minutes more on two cores);
PSE_PGO=0 builds without a profile (quicker, while editing), and any failure of the
instrumented build or of the training run falls back to the plain build, with a warning.

PSE_SANITIZE=address builds a debug core under AddressSanitizer (-O1 -g, bounds checks of the
C arrays by ASan); run Python with the ASan runtime preloaded, as .ci/asan does. It leaves the
Python modules uncompiled (their C is Cython's own, not ours to check).
"""

import contextlib
import os
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
PYTHON_MODULES = ["automaton", "bounded_cache", "cfg", "compiler", "counted_lengths", "engine",
                  "gbnf", "grammar", "json_spelling", "json_value", "lark_builder", "lark_reader",
                  "lark_syntax", "lark_terminals", "machines", "products", "regex", "schema_types",
                  *(f"json_schema.{name}" for name in (
                      "common", "merge", "formats", "refs", "logic", "negation", "enums",
                      "strings", "string_sets", "numbers", "members", "objects", "names", "arrays",
                      "compile", "schema"))]

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
        if SANITIZE or PGO == "0" or not guided or not self._is_gcc():
            super().build_extensions()
            return
        self._build_only([e for e in self.extensions if e not in guided])
        profiles = os.path.abspath(os.path.join(self.build_temp, "pgo"))
        shutil.rmtree(profiles, ignore_errors=True)
        os.makedirs(profiles)
        self.force = True  # (the same objects, built twice)
        try:
            with _flags(guided, [f"-fprofile-generate={profiles}"], ["-fprofile-generate"]):
                self._build_only(guided)
            self._train()
            with _flags(guided, [f"-fprofile-use={profiles}", "-fprofile-partial-training",
                                 "-Wno-missing-profile"], []):
                self._build_only(guided)
        except (BaseError, CCompilerError, OSError, subprocess.SubprocessError) as e:
            # (the build must not fail for want of a profile)
            print(f"warning: pse's profile-guided build failed ({e}); building without",
                  file=sys.stderr)
            self._build_only(guided)

    def _build_only(self, extensions: list) -> None:
        everything = self.extensions
        self.extensions = extensions
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
