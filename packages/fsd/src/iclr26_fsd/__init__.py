"""FSD (From Seeing to Doing), scaled down: a tiny spatial-reasoning VLM that emits visual aids
(target box, free-space points, an 8-point object trace) in FSD's grammar, a planar arm whose controller
follows them, and the direct-action baseline with the same backbone.

    from iclr26_fsd import FSDTiny, TableTop2D, evaluate
    model = FSDTiny(d_model=48, n_layers=2, d_mlp=192); model.fit(TableTop2D("train", 1500, seed=0), steps=250)
    print(evaluate(model, TableTop2D("test_compositional", 100, seed=0), arm="default")["success_rate"])
"""
from importlib.metadata import version as _version

from . import grammar, metrics
from .arm import Arm, UnreachableError
from .baseline import DirectActionPolicy
from .camera import Camera
from .controller import EpisodeResult, VisualAidController, execute_joints
from .data import UserData, load_jsonl
from .env import TableTop2D, TaskBatch, ground_truth_aids
from .evaluate import DirectOracle, MeanAids, OracleAids, aid_quality, evaluate, load_policy
from .grammar import ParseError, VisualAids, parse, resize_pad, serialize, to_normalised, to_pixels
from .model import FSDTiny
from .scene import Instruction, Scene, TableObject, UnknownObjectError, generate_scene, is_success, parse_instruction

__all__ = [
    "__version__",
    "Arm", "Camera", "DirectActionPolicy", "DirectOracle", "EpisodeResult", "FSDTiny", "Instruction", "MeanAids",
    "OracleAids",
    "ParseError", "Scene", "TableObject", "TableTop2D", "TaskBatch", "UnknownObjectError", "UnreachableError",
    "UserData", "VisualAidController", "VisualAids", "aid_quality", "evaluate", "execute_joints",
    "generate_scene", "grammar", "ground_truth_aids", "is_success", "load_jsonl", "load_policy", "metrics",
    "parse", "parse_instruction", "resize_pad", "serialize", "to_normalised", "to_pixels",
]
__version__ = _version("iclr26-fsd")
