"""iclr26-shared: what several iclr26 packages really need, and nothing more.

Modules: ``device`` (CPU/CUDA resolution), ``seeding`` (reproducible runs),
``datasets`` (embedded and local-folder data), ``metrics`` (clustering accuracy),
``cache`` (the per-user cache folder), ``bench`` (the benchmark protocol) and
``cli`` (shared command-line options).
torch is imported lazily, so numpy-only packages never pull it in.
"""
from importlib.metadata import version as _version

__version__ = _version("iclr26-shared")
__all__ = ["__version__"]
