"""The C extension dedup._scan (dedup/_scan.c, plain CPython C API); everything else is in pyproject.toml."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("dedup._scan", ["dedup/_scan.c"], depends=["dedup/_entities.h"],
                             extra_compile_args=["-O2"])])
