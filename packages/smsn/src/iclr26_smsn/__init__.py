"""iclr26-smsn: sequential information-bottleneck fusion (SMSN) for brain-tumour segmentation with
missing modalities, its parallel-fusion baselines, a 4-modality MRI phantom and the 15-subset evaluation.
"""
from importlib.metadata import version as _version

from .data import (
                   MODALITIES,
                   Case,
                   PhantomDataset,
                   PhantomSet,
                   apply_mask,
                   load_brats_folder,
                   make_phantom,
                   subset_masks,
                   subset_name,
)
from .losses import SMSNLoss, dice_ce_loss, kl_standard_normal, masked_recon_loss, orthogonality_loss
from .metrics import evaluate_subsets, region_dice
from .models import IBFM, SMSN, ParallelFusionNet, SegOutput, SpecificExtractor, build_model, reorder_modalities
from .train import History, fit

__version__ = _version("iclr26-smsn")
__all__ = ["IBFM", "MODALITIES", "SMSN", "Case", "History", "ParallelFusionNet", "PhantomDataset", "PhantomSet",
           "SMSNLoss", "SegOutput", "SpecificExtractor", "__version__", "apply_mask", "build_model", "dice_ce_loss",
           "evaluate_subsets", "fit", "kl_standard_normal", "load_brats_folder", "make_phantom",
           "masked_recon_loss", "orthogonality_loss", "region_dice", "reorder_modalities", "subset_masks",
           "subset_name"]
