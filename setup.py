"""The Cython extensions of pse; everything else is in pyproject.toml.

The core (pse/_core/*.pyx) is Cython. The modules that compile a structure (schema to
machine to tables: plain Python, much of it loops over dicts and lists) are compiled by Cython
too, from their unchanged .py source, for speed: an extension module is imported instead of
the .py beside it, so after editing one of them in a source tree, build again
(`python setup.py build_ext --inplace`; tests/conftest.py refuses to run on a stale build).

PSE_SANITIZE=address builds a debug core under AddressSanitizer (-O1 -g, bounds checks of the
C arrays by ASan); run Python with the ASan runtime preloaded, as .ci/asan does. It leaves the
Python modules uncompiled (their C is Cython's own, not ours to check).
"""

import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

MODULES = ["canonical", "structure", "stepper", "trie", "byte_kinds", "slices", "mask", "forced",
           "rules", "frozen", "automata", "key_names", "unicode_tables"]
# the compile path, from a JSON Schema to the engine's tables
PYTHON_MODULES = ["automaton", "bounded_cache", "compiler", "counted_lengths", "engine",
                  "json_spelling", "json_value", "machines", "products", "regex", "schema_types",
                  *(f"json_schema.{name}" for name in (
                      "common", "merge", "formats", "refs", "logic", "negation", "enums",
                      "strings", "string_sets", "numbers", "objects", "names", "arrays",
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

# annotation_typing off: in .py source, annotations are documentation (Cython would otherwise
# refuse a numpy integer where `int` is annotated)
setup(ext_modules=cythonize(extensions, language_level=3,
                            compiler_directives={"annotation_typing": False}))
