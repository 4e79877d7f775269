"""iclr26-bench: the cross-package runner.

``iclr26-bench list`` shows every benchmark registered under the ``iclr26.benchmarks``
entry-point group, ``run`` executes them (in parallel through joblib, resuming from
results already on disk) and ``report`` turns a results folder into ``REPORT.md``.
"""
from importlib.metadata import version as _version

from .report import write_report
from .runner import run_benchmarks

__version__ = _version("iclr26-bench")
__all__ = ["__version__", "run_benchmarks", "write_report"]
