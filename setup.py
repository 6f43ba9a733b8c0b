"""The C extensions dedup._scan (dedup/_scan.c: the native extractor's one pass over the HTML) and dedup._fast
(dedup/_fast.c: the per-page arithmetic after extraction), plain CPython C API; everything else is in
pyproject.toml. -ffp-contract=off: no fused multiply-add, so _fast's floats are numpy's, bit for bit."""
from setuptools import Extension, setup

setup(ext_modules=[Extension("dedup._scan", ["dedup/_scan.c"], depends=["dedup/_entities.h"],
                             extra_compile_args=["-O2"]),
                   Extension("dedup._fast", ["dedup/_fast.c"], extra_compile_args=["-O3", "-ffp-contract=off"])])
