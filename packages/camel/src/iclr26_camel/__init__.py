"""iclr26-camel: CAMEL, constant-degree incomplete multi-view clustering (ICLR 2026).

>>> from iclr26_camel import CAMEL, load_mfeat, make_incomplete_mask, apply_mask
>>> Xs, y = load_mfeat()
>>> labels = CAMEL(n_clusters=10, random_state=0).fit_predict(apply_mask(Xs, make_incomplete_mask(2000, 6, 0.5, 0)))
"""
from importlib.metadata import version as _version

from .baselines import AverageAnchorGraph, BestSingleView, ConcatKMeans, ConcatSpectral
from .data import (
    load_csv_dir,
    load_mat,
    load_mfeat,
    load_mfeat_uci3,
    load_npz,
    load_views,
    make_incomplete_multiview_blobs,
)
from .masks import apply_mask, make_incomplete_mask
from .metrics import ari, clustering_accuracy, evaluate, nmi, purity
from .model import CAMEL
from .tensor import (
    ldelta,
    ldelta_tensor_norm,
    prox_ldelta_scalar,
    prox_tensor,
    tensor_rank_profile,
    tnn,
    tprod,
    tsvd,
    ttranspose,
)

__version__ = _version("iclr26-camel")
__all__ = [
    "CAMEL", "AverageAnchorGraph", "BestSingleView", "ConcatKMeans", "ConcatSpectral",
    "apply_mask", "make_incomplete_mask",
    "load_csv_dir", "load_mat", "load_mfeat", "load_mfeat_uci3", "load_npz", "load_views",
    "make_incomplete_multiview_blobs",
    "ari", "clustering_accuracy", "evaluate", "nmi", "purity",
    "ldelta", "ldelta_tensor_norm", "prox_ldelta_scalar", "prox_tensor", "tensor_rank_profile", "tnn", "tprod",
    "tsvd", "ttranspose",
    "__version__",
]
