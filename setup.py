"""The Cython extensions of pse; everything else is in pyproject.toml."""

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

MODULES = ["structure", "stepper", "trie", "mask", "forced"]

extensions = [
    Extension(
        f"pse._core.{name}",
        [f"pse/_core/{name}.pyx"],
        include_dirs=[numpy.get_include()],
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=["-O3"],
    )
    for name in MODULES
]

setup(ext_modules=cythonize(extensions, language_level=3))
