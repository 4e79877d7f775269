"""DREAM: dual-branch representations with dynamic gated fusion and triple-granularity alignment
for deep multi-view clustering (ICLR 2026), as a scikit-learn-style estimator."""
from importlib.metadata import version as _version

from .baselines import AverageGraphSpectral, BestViewKMeans, ConcatKMeans, ConcatSpectral, PropagatedKMeans
from .data import (
                   load_graph_views,
                   load_mat,
                   load_mfeat,
                   load_mfeat_uci3,
                   load_npz,
                   load_views,
                   make_community_views,
                   make_semantic_structural_views,
                   preprocess_view,
)
from .graph import check_graphs, knn_graph, normalize_adjacency
from .model import DREAM, check_views
from .nn import GatedFusion, StudentTClusterHead, ViewGCN, ViewVAE, student_t_assignment

__version__ = _version("iclr26-dream")
__all__ = [
    "__version__",
    "DREAM", "check_views",
    "ViewVAE", "ViewGCN", "GatedFusion", "StudentTClusterHead", "student_t_assignment",
    "knn_graph", "normalize_adjacency", "check_graphs",
    "ConcatKMeans", "ConcatSpectral", "AverageGraphSpectral", "BestViewKMeans", "PropagatedKMeans",
    "load_mfeat", "load_mfeat_uci3", "make_semantic_structural_views", "make_community_views", "load_mat",
    "load_npz", "load_views", "load_graph_views", "preprocess_view",
]
