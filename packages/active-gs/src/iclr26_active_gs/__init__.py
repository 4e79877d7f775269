"""Active learning of 3D Gaussian Splatting with consistent region partition and robust pose estimation.

A differentiable pure-PyTorch Gaussian rasteriser (gsplat on CUDA when installed), the paper's
semantic-variance next-view selector with its region partition, robust pose refinement of captured
images, the random / farthest-view / Fisher baselines, a procedural scene and the active loop.
"""
from importlib.metadata import version as _version

from .cameras import Camera, fibonacci_sphere_cameras, look_at, pose_errors, se3_exp, se3_log
from .features import HandcraftedFeatures, TorchvisionFeatures
from .io import load_blender, load_colmap_text, load_image_folder, read_image, read_poses, write_png
from .loop import ActiveLoop, ActiveResult, evaluate, train_all_views
from .model import GaussianModel
from .pose import pose_loss, robust_pose_refine
from .regions import partition_regions, region_uncertainty
from .render import contrib_by_gradient, lift_by_gradient, render
from .scene import CapturedScene, SyntheticObjectScene
from .selectors import (
    FarthestViewSelector,
    FisherSelector,
    RandomSelector,
    Selector,
    SemanticVarianceSelector,
    fisher_diagonal,
    fisher_probe_gradients,
)
from .train import Trainer, psnr, ssim
from .variance import gaussian_feature_variance

__version__ = _version("iclr26-active-gs")
__all__ = [
    "__version__",
    "ActiveLoop", "ActiveResult", "Camera", "CapturedScene", "FarthestViewSelector", "FisherSelector", "GaussianModel",
    "HandcraftedFeatures", "RandomSelector", "Selector", "SemanticVarianceSelector", "SyntheticObjectScene",
    "TorchvisionFeatures", "Trainer", "contrib_by_gradient", "evaluate", "fibonacci_sphere_cameras",
    "fisher_diagonal", "fisher_probe_gradients", "gaussian_feature_variance", "lift_by_gradient", "load_blender",
    "load_colmap_text", "load_image_folder", "look_at", "partition_regions", "pose_errors", "pose_loss", "psnr",
    "read_image", "read_poses", "region_uncertainty", "render", "robust_pose_refine", "se3_exp", "se3_log", "ssim",
    "train_all_views", "write_png",
]
