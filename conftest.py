"""Workspace-wide pytest setup: one BLAS/torch thread per xdist worker, no hypothesis deadlines."""
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

try:
    from hypothesis import settings
except ImportError:  # hypothesis is a dev dependency; members' own test runs may lack it
    pass
else:
    settings.register_profile("iclr26", deadline=None, max_examples=25, derandomize=True)
    settings.load_profile("iclr26")


def pytest_configure(config):
    try:
        import torch
    except ImportError:
        return
    torch.set_num_threads(1)
