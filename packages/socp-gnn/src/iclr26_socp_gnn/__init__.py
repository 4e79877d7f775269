"""GNNs for second-order cone programs: graph representation, feasibility, optimal value and solution prediction.

Reimplementation of "On the Universality and Complexity of GNN for Solving Second-order Cone Programs"
(ICLR 2026). See the package README for the reproduction and its limits.
"""
from importlib.metadata import version as _version

from .data import SOCPDataset, calibrate_g_shift, label_instance, load_dataset, make_dataset, random_socp, save_dataset
from .graph import from_heterodata, to_heterodata, wl_colors
from .grid import bus_balance_residual, opf_dataset, socp_opf
from .models import SOCPGNN, FlatMLP, WeightedSum, build_model, count_parameters
from .problem import SOCP, CompiledSOCP, SolveResult, project, solve
from .train import History, evaluate, fit, predict

__version__ = _version("iclr26-socp-gnn")
__all__ = [
    "__version__",
    "SOCP", "SolveResult", "solve", "project", "CompiledSOCP",
    "to_heterodata", "from_heterodata", "wl_colors",
    "SOCPGNN", "FlatMLP", "WeightedSum", "build_model", "count_parameters",
    "random_socp", "make_dataset", "calibrate_g_shift", "label_instance", "save_dataset", "load_dataset",
    "SOCPDataset", "socp_opf", "opf_dataset", "bus_balance_residual", "fit", "evaluate", "predict", "History",
]
