"""iclr26-vit-token: specialised [CLS] and patch-token processing in Vision Transformers.

Reproduces "Revisiting [CLS] and Patch Token Interaction in Vision Transformers" (ICLR 2026): the
[CLS] token gets its own LayerNorm (and early QKV) parameters in the first blocks, for about +8 %
parameters and no extra FLOPs.
"""
from importlib.metadata import version as _version

from .analysis import ln_dimension_specialisation, token_cosine_stats
from .data import ShapesSeg, load_image_folder, load_seg_pairs, load_seg_split, make_shapes_seg, shapes_seg_splits
from .layers import TokenSpecLayerNorm, TokenSpecLinear
from .model import (
    BASE,
    SEPNORM,
    Block,
    SpecViT,
    count_flops,
    resolve_blocks,
    vit_base_config,
    vit_cpu_config,
    vit_small_config,
)
from .pretrain import PretrainResult, pretrain
from .probe import extract_features, linear_probe_cls, linear_probe_seg, mean_iou

__version__ = _version("iclr26-vit-token")
__all__ = [
    "BASE", "SEPNORM", "Block", "PretrainResult", "ShapesSeg", "SpecViT", "TokenSpecLayerNorm", "TokenSpecLinear",
    "__version__", "count_flops", "extract_features", "linear_probe_cls", "linear_probe_seg",
    "ln_dimension_specialisation", "load_image_folder", "load_seg_pairs", "load_seg_split", "make_shapes_seg",
    "mean_iou", "pretrain",
    "resolve_blocks", "shapes_seg_splits", "token_cosine_stats", "vit_base_config", "vit_cpu_config",
    "vit_small_config",
]
