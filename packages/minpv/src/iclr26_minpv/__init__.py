"""MinPV: the minimum path variance principle for score-based density-ratio estimation (ICLR 2026).

A time-score network ``s_θ(x, t)`` is trained on a Gaussian-anchored interpolation and integrated
over ``t`` to give ``log p(x)/q(x)``; MinPV learns the interpolation (a Kumaraswamy-mixture
schedule) by minimising the closed-form variance of the conditional time-score target.
"""
from importlib.metadata import version as _version

from .baselines import ClassifierDRE, ksg_mi
from .data import gaussian_mi_task, gaussian_shift_task, load_uci, toy_2d, true_log_ratio_gaussian_mi
from .estimators import TimeScoreDRE, estimate_mi, minpv_loss
from .network import TimeScoreNet
from .oracle import exact_score_bias, gaussian_mi_time_score
from .paths import CosinePath, InterpolantPath, KumaraswamyMixturePath, LinearPath, TrigPath, VPPath, make_path
from .quadrature import integrate_time_score, time_grid
from .variance import (
    SPEC_CLAMP,
    VARIANCE_FLOOR,
    conditional_time_score,
    fit_path_variance,
    geodesic_lower_bound,
    path_variance_objective,
    time_score_variance,
)

__version__ = _version("iclr26-minpv")
__all__ = [
    "__version__",
    "ClassifierDRE", "ksg_mi",
    "gaussian_mi_task", "gaussian_shift_task", "load_uci", "toy_2d", "true_log_ratio_gaussian_mi",
    "TimeScoreDRE", "estimate_mi", "minpv_loss", "TimeScoreNet", "exact_score_bias", "gaussian_mi_time_score",
    "CosinePath", "InterpolantPath", "KumaraswamyMixturePath", "LinearPath", "TrigPath", "VPPath", "make_path",
    "integrate_time_score", "time_grid",
    "conditional_time_score", "fit_path_variance", "geodesic_lower_bound", "path_variance_objective",
    "time_score_variance", "SPEC_CLAMP", "VARIANCE_FLOOR",
]
