"""The Cython extensions of pse; everything else is in pyproject.toml.

PSE_SANITIZE=address builds a debug core under AddressSanitizer (-O1 -g, bounds checks of the
C arrays by ASan); run Python with the ASan runtime preloaded, as .ci/asan does.
"""

import os

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

MODULES = ["structure", "stepper", "trie", "mask", "forced"]

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

setup(ext_modules=cythonize(extensions, language_level=3))
