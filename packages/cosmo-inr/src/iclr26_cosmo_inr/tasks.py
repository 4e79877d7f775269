"""Training loop and the tasks: image fitting, denoising, super-resolution, inpainting, 3-D occupancy.

Protocol of the official scripts: MSE on the observed samples, Adam, LambdaLR schedule
lr · b^{min(step/iters, 1)} (b = 0.1; 0.25 for inpainting), PSNR = −10 log10(MSE) on [0, 1]
values, best PSNR over iterations reported for fitting and denoising.
"""
from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor, nn

from .data import check_image, get_coords, load_image, min_max, occupancy, photon_noise
from .models import COSMO_MODELS, check_coords, make_model, n_real_parameters, warn_if_unbounded

LEARNING_RATES = {"cosmo_rc": 9e-4, "cosmo_rc_nonorm": 9e-4, "rc_nomod": 9e-4, "wire": 5e-3}
DEFAULT_LR = 1e-3
PRIOR_MODELS = (*COSMO_MODELS, "incode")
DTYPES = {"float32": torch.float32, "float64": torch.float64}


def resolve_dtype(dtype) -> torch.dtype:
    """``"float32"`` / ``"float64"`` (or the torch dtype) -> the torch dtype of parameters and coordinates.

    float64 makes a fit reproducible across machines and kernels to far below a dB: float32 training of
    COSMO-RC is chaotic (rounding differences grow to about 1 dB over a few hundred steps).

    Raises:
        ValueError: any other value.
    """
    if dtype in DTYPES.values():
        return dtype
    if dtype not in DTYPES:
        raise ValueError(f"dtype: expected one of {tuple(DTYPES)}, got {dtype!r}")
    return DTYPES[dtype]


def default_lr(model_name: str) -> float:
    """The learning rate used for a model: COSMO 9e-4 (official), WIRE 5e-3, the others 1e-3."""
    return LEARNING_RATES.get(model_name, DEFAULT_LR)


def psnr(pred, target, data_range: float = 1.0) -> float:
    """PSNR = 10 log10(data_range² / MSE) in dB (``inf`` for identical inputs).

    Raises:
        ValueError: shapes differ or ``data_range`` is not positive.
    """
    pred_a = pred.detach().double().cpu().numpy() if isinstance(pred, Tensor) else np.asarray(pred, np.float64)
    tgt_a = target.detach().double().cpu().numpy() if isinstance(target, Tensor) else np.asarray(target, np.float64)
    if pred_a.shape != tgt_a.shape:
        raise ValueError(f"pred, target: expected the same shape, got {pred_a.shape} and {tgt_a.shape}")
    if not data_range > 0:
        raise ValueError(f"data_range: expected a positive number, got {data_range}")
    mse = float(np.mean((pred_a - tgt_a) ** 2))
    return math.inf if mse == 0 else 10.0 * math.log10(data_range**2 / mse)


def ssim(pred: np.ndarray, target: np.ndarray) -> float:
    """SSIM on [0, 1] images ``(H, W)`` or ``(H, W, C)`` (scikit-image, data_range 1; window fits small images)."""
    from skimage.metrics import structural_similarity

    win = min(7, *target.shape[:2])
    win -= 1 - win % 2
    if win < 3:
        return float("nan")
    return float(structural_similarity(target, np.clip(pred, 0, 1), data_range=1.0, win_size=win,
                                       channel_axis=-1 if target.ndim == 3 else None))


@dataclass
class FitResult:
    """Outcome of ``fit_signal``.

    Attributes:
        psnr_curve: ``(iters,)`` PSNR per iteration (NaN where not evaluated or non-finite).
        best_psnr, final_psnr: best and last evaluated PSNR (dB).
        seconds: wall time of the loop.
        nonfinite: whether a loss or output was NaN/Inf at any step.
        best_output: the full-batch output at the best PSNR (``None`` in mini-batch mode).
    """

    psnr_curve: np.ndarray
    best_psnr: float
    final_psnr: float
    seconds: float
    nonfinite: bool = False
    best_output: Tensor | None = field(default=None, repr=False)

    def iterations_to(self, fraction: float = 0.9) -> int:
        """First iteration (1-based) whose PSNR reaches ``fraction`` of ``best_psnr`` (dB)."""
        hits = np.flatnonzero(np.nan_to_num(self.psnr_curve, nan=-np.inf) >= fraction * self.best_psnr)
        return int(hits[0]) + 1 if hits.size else len(self.psnr_curve)


def fit_signal(model: nn.Module, coords: Tensor, values: Tensor, *, iters: int, lr: float,
               schedule_b: float = 0.1, batch: int | None = None, eval_fn: Callable[[nn.Module], float] | None = None,
               eval_every: int = 1, reference: Tensor | None = None, seed: int = 0,
               progress: Callable | None = None) -> FitResult:
    """Fits ``model`` to ``values`` at ``coords`` with MSE, Adam and the LambdaLR decay.

    Args:
        model: a network ``(N, d) -> (N, c)``, on the device of ``coords``.
        coords: ``(N, d)`` finite coordinates. values: ``(N, c)`` targets.
        iters: number of steps. lr: Adam learning rate. schedule_b: final lr factor b.
        batch: mini-batch size (random samples each step), ``None`` for full batch.
        eval_fn: ``eval_fn(model) -> psnr`` called every ``eval_every`` steps (e.g. on a finer grid);
            otherwise the PSNR of the full-batch output against ``reference`` (default ``values``).
        seed: seeds the mini-batch sampler.
        progress: wraps the step iterator (e.g. a progress bar).

    Raises:
        ValueError: bad shapes, non-finite inputs, ``iters`` < 1, ``lr`` <= 0, ``batch`` < 1.
    """
    in_features = getattr(model, "in_features", coords.shape[-1] if coords.ndim == 2 else -1)
    check_coords(coords, in_features)
    if values.ndim != 2 or values.shape[0] != coords.shape[0]:
        raise ValueError(f"values: expected shape ({coords.shape[0]}, C), got {tuple(values.shape)}")
    if not torch.isfinite(values).all():
        raise ValueError("values: contains NaN or Inf")
    if int(iters) != iters or iters < 1:
        raise ValueError(f"iters: expected an integer >= 1, got {iters}")
    if not lr > 0:
        raise ValueError(f"lr: expected a positive learning rate, got {lr}")
    if batch is not None and (int(batch) != batch or batch < 1):
        raise ValueError(f"batch: expected a positive integer or None, got {batch}")
    warn_if_unbounded(model, values)
    reference = values if reference is None else reference
    # foreach: one batched update over all tensors (same numbers as the per-tensor loop)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr, foreach=True)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda step: schedule_b ** min(step / iters, 1.0))
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    curve = np.full(int(iters), np.nan)
    best, best_output, nonfinite = -math.inf, None, False
    start = time.perf_counter()
    steps = range(int(iters)) if progress is None else progress(range(int(iters)))
    for step in steps:
        if batch is None or batch >= len(coords):
            x, y = coords, values
        else:
            idx = torch.randint(len(coords), (int(batch),), generator=gen).to(coords.device)
            x, y = coords[idx], values[idx]
        out = model(x)
        loss = nn.functional.mse_loss(out, y)
        extra = model.regularisation_loss() if hasattr(model, "regularisation_loss") else None
        total = loss if extra is None else loss + extra
        if not torch.isfinite(total):
            nonfinite = True
        optimiser.zero_grad(set_to_none=True)
        total.backward()
        optimiser.step()
        scheduler.step()
        if eval_fn is not None:
            if (step + 1) % eval_every == 0 or step == iters - 1:
                curve[step] = eval_fn(model)
        elif x is coords:
            with torch.no_grad():
                mse = float(nn.functional.mse_loss(out, reference))
            curve[step] = math.inf if mse == 0 else -10.0 * math.log10(mse) if math.isfinite(mse) else np.nan
            if curve[step] > best:
                best, best_output = curve[step], out.detach().clone()
    finite = curve[np.isfinite(curve)]
    nonfinite = nonfinite or bool(np.isnan(curve).any() and eval_fn is None and batch is None)
    return FitResult(curve, float(finite.max()) if finite.size else math.nan,
                     float(finite[-1]) if finite.size else math.nan, time.perf_counter() - start, nonfinite,
                     best_output)


@dataclass
class TaskResult:
    """Outcome of an image task: metric values, the reconstruction and the fit details.

    Attributes:
        model: model name. psnr: best PSNR (dB) against the clean/HR image. ssim: SSIM of the reconstruction.
        n_params: real-parameter count. seconds: training time. reconstruction: ``(H, W[, C])`` float32.
        fit: the ``FitResult``. extra: task-specific numbers (e.g. the noisy input's PSNR).
    """

    model: str
    psnr: float
    ssim: float
    n_params: int
    seconds: float
    reconstruction: np.ndarray = field(repr=False)
    fit: FitResult = field(repr=False)
    extra: dict = field(default_factory=dict)


def _image(image, size, gray) -> np.ndarray:
    if isinstance(image, str) or hasattr(image, "__fspath__"):
        return load_image(image, size=size, gray=gray)
    x = check_image(image)
    if size is not None or gray:
        from skimage import color, transform

        if gray and x.ndim == 3:
            x = color.rgb2gray(x).astype(np.float32)
        if size is not None:
            shape = (size, size) if isinstance(size, int) else tuple(size)
            x = transform.resize(x, shape + x.shape[2:], anti_aliasing=True).astype(np.float32)
    return x


def build_model(model_name: str, in_features: int, out_features: int, observed=None, *, hidden_features: int = 256,
                hidden_layers: int = 3, prior: str = "resnet_stem", match_params_to: str | None = None,
                task: str = "image", device="cpu", dtype=torch.float32, **kwargs) -> nn.Module:
    """``make_model`` plus the prior settings for prior-using models (``observed`` feeds their embedder),
    moved to ``device`` and ``dtype``."""
    if model_name in PRIOR_MODELS:
        kwargs = dict(kwargs, prior=prior, prior_signal=None if prior == "none" else observed, task=task)
    model = make_model(model_name, in_features, out_features, hidden_features=hidden_features,
                       hidden_layers=hidden_layers, match_params_to=match_params_to, **kwargs)
    return model.to(device=device, dtype=dtype)


def _pixels(x: np.ndarray, device, dtype=torch.float32) -> Tensor:
    return torch.as_tensor(x.reshape(x.shape[0] * x.shape[1], -1), device=device, dtype=dtype)


def _finish(name: str, model, fit: FitResult, clean: np.ndarray, recon: Tensor, extra=None,
            value: float | None = None) -> TaskResult:
    rec = recon.detach().cpu().numpy().reshape(clean.shape).astype(np.float32)
    return TaskResult(name, fit.best_psnr if value is None else value, ssim(rec, clean), n_real_parameters(model),
                      fit.seconds, rec, fit, extra or {})


SELECTIONS = ("final", "oracle")


def _check_selection(selection: str) -> str:
    if selection not in SELECTIONS:
        raise ValueError(f"selection: expected one of {SELECTIONS}, got {selection!r}")
    return selection


def _selected(selection: str, model: nn.Module, fit: FitResult, coords: Tensor, truth: Tensor,
              oracle_out: Tensor) -> tuple[float, Tensor, dict]:
    """(PSNR, ``(N, C)`` output, extra) of the reconstruction chosen without (``"final"``) or with
    (``"oracle"``) the ground truth ``truth``.

    ``"final"``: the model after the last step, chosen without looking at ``truth`` (which only scores it);
    the oracle's best is kept in ``extra["oracle_best_psnr"]``. ``"oracle"``: the iterate with the best
    PSNR against ``truth`` (the official scripts' early stopping, which needs the clean image), among the
    tracked iterates (``fit.best_psnr``, output ``oracle_out``) and the final model.
    """
    with torch.no_grad():
        out = model(coords)
    final = psnr(out, truth)
    best = max(fit.best_psnr, final) if math.isfinite(fit.best_psnr) else final
    if selection == "oracle":
        return best, (out if best == final else oracle_out), {"selection": "oracle"}
    return final, out, {"selection": "final", "oracle_best_psnr": best}


def fit_image(image, model_name: str = "cosmo_rc", *, size=None, gray: bool = False, iters: int = 500,
              lr: float | None = None, device="cpu", dtype="float32", seed: int = 0, progress=None,
              **model_kwargs) -> TaskResult:
    """Image fitting (representation): full batch over all pixels, best PSNR over iterations.

    Args:
        image: a name of ``data.OFFLINE_IMAGES``, a file path, or an array in [0, 1].
        model_name: see ``models.MODELS``. model_kwargs: ``hidden_features``, ``hidden_layers``, ``prior``,
            ``match_params_to`` and model options (``kernel`` for COSMO).
        dtype: ``"float32"`` or ``"float64"`` (parameters, coordinates and targets; see ``resolve_dtype``);
            the other tasks take it too.
    """
    clean = _image(image, size, gray)
    torch.manual_seed(seed)
    place = {"device": device, "dtype": resolve_dtype(dtype)}
    coords = get_coords(*clean.shape[:2], **place)
    values = _pixels(clean, **place)
    model = build_model(model_name, 2, values.shape[1], clean, **place, **model_kwargs)
    fit = fit_signal(model, coords, values, iters=iters, lr=lr or default_lr(model_name), seed=seed,
                     progress=progress)
    recon = fit.best_output if fit.best_output is not None else values * 0
    return _finish(model_name, model, fit, clean, recon)


def denoise_image(image, model_name: str = "cosmo_rc", *, tau: float = 40.0, readout: float = 2.0, size=None,
                  gray: bool = False, iters: int = 500, lr: float | None = None, device="cpu", dtype="float32",
                  seed: int = 0, progress=None, selection: str = "final", **model_kwargs) -> TaskResult:
    """Denoising: fit the photon-noisy image (min–max normalised); PSNR against the clean image.

    The noise is drawn with ``numpy.random.default_rng(seed)``; the fit is ``denoise_observed``.
    ``selection="final"`` (default) reports the model after ``iters`` steps, chosen without the clean
    image; ``"oracle"`` reports the best iterate scored on the clean image (the official script's early
    stopping). Either way ``extra["selection"]`` names it.

    Raises:
        ValueError: unknown ``selection``.
    """
    _check_selection(selection)
    clean = _image(image, size, gray)
    noisy = min_max(photon_noise(clean, tau, readout, np.random.default_rng(seed)))
    return denoise_observed(noisy, clean, model_name, iters=iters, lr=lr, device=device, dtype=dtype, seed=seed,
                            progress=progress, selection=selection, **model_kwargs)


def denoise_observed(noisy: np.ndarray, clean: np.ndarray, model_name: str = "cosmo_rc", *, iters: int = 500,
                     lr: float | None = None, device="cpu", dtype="float32", seed: int = 0, progress=None,
                     selection: str = "final", **model_kwargs) -> TaskResult:
    """Fits the observation ``noisy`` ``(H, W[, C])`` in [0, 1]; ``clean`` (same shape) only scores the result.

    With ``selection="final"`` the training and the returned reconstruction depend on ``noisy``, the seed
    and the settings only: ``clean`` gives ``psnr``/``ssim`` and the oracle's best PSNR
    (``extra["oracle_best_psnr"]``), never the choice. ``"oracle"`` returns the best iterate on ``clean``.

    Raises:
        ValueError: unknown ``selection``, or ``noisy`` and ``clean`` of different shapes.
    """
    _check_selection(selection)
    noisy, clean = check_image(noisy, "noisy"), check_image(clean, "clean")
    if noisy.shape != clean.shape:
        raise ValueError(f"noisy, clean: expected the same shape, got {noisy.shape} and {clean.shape}")
    torch.manual_seed(seed)
    place = {"device": device, "dtype": resolve_dtype(dtype)}
    coords = get_coords(*clean.shape[:2], **place)
    model = build_model(model_name, 2, _pixels(clean, **place).shape[1], noisy, **place, task="denoising",
                        **model_kwargs)
    fit = fit_signal(model, coords, _pixels(noisy, **place), iters=iters, lr=lr or default_lr(model_name),
                     reference=_pixels(clean, **place), seed=seed, progress=progress)
    oracle_out = fit.best_output if fit.best_output is not None else _pixels(noisy, **place)
    value, recon, chosen = _selected(selection, model, fit, coords, _pixels(clean, **place), oracle_out)
    return _finish(model_name, model, fit, clean, recon, {"noisy_psnr": psnr(noisy, clean), **chosen}, value)


def _lr_coords(h: int, w: int, factor: int, device, dtype=torch.float32) -> Tensor:
    """Centres of the LR pixels in the HR grid's [−1, 1] frame, ``(h·w, 2)``."""
    axes = []
    for n_lr, n_hr in ((h, h * factor), (w, w * factor)):
        centre = (torch.arange(n_lr, dtype=dtype, device=device) + 0.5) * factor - 0.5
        axes.append(-1.0 + 2.0 * centre / max(n_hr - 1, 1))
    return torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=-1).reshape(-1, 2)


def _tracker(coords: Tensor, values: Tensor) -> tuple[Callable[[nn.Module], float], dict]:
    """An ``eval_fn`` scoring the model on (coords, values) that keeps the best output in the returned dict."""
    best = {"psnr": -math.inf, "out": values * 0}

    @torch.no_grad()
    def evaluate(model: nn.Module) -> float:
        out = model(coords)
        value = psnr(out, values)
        if value > best["psnr"]:
            best.update(psnr=value, out=out)
        return value

    return evaluate, best


def super_resolve(image, model_name: str = "cosmo_rc", *, factor: int = 4, size=None, gray: bool = False,
                  iters: int = 500, lr: float | None = None, eval_every: int = 10, device="cpu", dtype="float32",
                  seed: int = 0, progress=None, selection: str = "final", **model_kwargs) -> TaskResult:
    """Super-resolution: train on the area-downsampled (×``factor``) image, evaluate on the HR grid.

    The image is cropped to a multiple of ``factor`` and downsampled with ``downsample``; the fit is
    ``super_resolve_observed``. ``selection``: ``"final"`` (default, the model after ``iters`` steps) or
    ``"oracle"`` (the best iterate scored on the HR image), as in ``denoise_image``.

    Raises:
        ValueError: ``factor`` not an integer >= 1, or larger than the image.
    """
    factor = _check_factor(factor)
    _check_selection(selection)
    hr = _image(image, size, gray)
    h, w = hr.shape[0] // factor, hr.shape[1] // factor
    if h < 1 or w < 1:
        raise ValueError(f"factor: {factor} is larger than the image {hr.shape[:2]}")
    hr = hr[: h * factor, : w * factor]
    return super_resolve_observed(downsample(hr, factor), hr, factor, model_name, iters=iters, lr=lr,
                                  eval_every=eval_every, device=device, dtype=dtype, seed=seed, progress=progress,
                                  selection=selection, **model_kwargs)


def _check_factor(factor) -> int:
    if isinstance(factor, bool) or int(factor) != factor or factor < 1:
        raise ValueError(f"factor: expected an integer >= 1, got {factor!r}")
    return int(factor)


def downsample(hr: np.ndarray, factor: int) -> np.ndarray:
    """Area (local-mean) downsampling of ``(H, W[, C])`` by ``factor`` -> ``(H // factor, W // factor[, C])``."""
    from skimage.transform import downscale_local_mean

    factor = _check_factor(factor)
    h, w = hr.shape[0] // factor, hr.shape[1] // factor
    return downscale_local_mean(hr[: h * factor, : w * factor],
                                (factor, factor) + (1,) * (hr.ndim - 2)).astype(np.float32)


def super_resolve_observed(lr_image: np.ndarray, hr: np.ndarray, factor: int, model_name: str = "cosmo_rc", *,
                           iters: int = 500, lr: float | None = None, eval_every: int = 10, device="cpu",
                           dtype="float32", seed: int = 0, progress=None, selection: str = "final",
                           **model_kwargs) -> TaskResult:
    """Fits the LR observation ``lr_image`` ``(h, w[, C])`` at its pixel centres and renders the
    ``(h·factor, w·factor[, C])`` grid; ``hr`` (that shape) only scores it.

    With ``selection="final"`` the training and the returned reconstruction depend on ``lr_image``, the
    seed and the settings only (``hr`` is read by the oracle tracker every ``eval_every`` steps, which
    changes nothing in the model). ``"oracle"`` returns the best tracked iterate on ``hr``.

    Raises:
        ValueError: ``factor`` not an integer >= 1, unknown ``selection``, or ``hr`` not ``factor`` × ``lr_image``.
    """
    factor = _check_factor(factor)
    _check_selection(selection)
    lr_image, hr = check_image(lr_image, "lr_image"), check_image(hr, "hr")
    h, w = lr_image.shape[:2]
    if hr.shape != (h * factor, w * factor) + lr_image.shape[2:]:
        raise ValueError(f"hr: expected shape {(h * factor, w * factor) + lr_image.shape[2:]} "
                         f"(factor {factor} x lr_image), got {hr.shape}")
    torch.manual_seed(seed)
    place = {"device": device, "dtype": resolve_dtype(dtype)}
    hr_coords, hr_values = get_coords(h * factor, w * factor, **place), _pixels(hr, **place)
    model = build_model(model_name, 2, hr_values.shape[1], lr_image, **place, **model_kwargs)
    evaluate, best = _tracker(hr_coords, hr_values)
    fit = fit_signal(model, _lr_coords(h, w, factor, **place), _pixels(lr_image, **place), iters=iters,
                     lr=lr or default_lr(model_name), eval_fn=evaluate, eval_every=eval_every, seed=seed,
                     progress=progress)
    value, recon, chosen = _selected(selection, model, fit, hr_coords, hr_values, best["out"])
    return _finish(model_name, model, fit, hr, recon, {"factor": factor, **chosen}, value)


def inpaint(image, model_name: str = "cosmo_rc", *, keep: float = 0.2, batch: int = 8192, size=None,
            gray: bool = False, iters: int = 500, lr: float | None = None, eval_every: int = 10, device="cpu",
            dtype="float32", seed: int = 0, progress=None, **model_kwargs) -> TaskResult:
    """Inpainting: train on a random ``keep`` fraction of pixels (mini-batches), evaluate on all pixels.

    Raises:
        ValueError: ``keep`` outside (0, 1].
    """
    if not 0 < keep <= 1:
        raise ValueError(f"keep: expected a fraction in (0, 1], got {keep}")
    clean = _image(image, size, gray)
    rng = np.random.default_rng(seed)
    n = clean.shape[0] * clean.shape[1]
    kept = np.sort(rng.choice(n, size=max(1, int(round(keep * n))), replace=False))
    mask = np.zeros(n, dtype=np.float32)
    mask[kept] = 1
    observed = clean * mask.reshape(clean.shape[:2] + (1,) * (clean.ndim - 2))
    torch.manual_seed(seed)
    place = {"device": device, "dtype": resolve_dtype(dtype)}
    coords, values = get_coords(*clean.shape[:2], **place), _pixels(clean, **place)
    model = build_model(model_name, 2, values.shape[1], observed, **place, **model_kwargs)
    idx = torch.as_tensor(kept, device=device)
    evaluate, best = _tracker(coords, values)
    fit = fit_signal(model, coords[idx], values[idx], iters=iters, lr=lr or default_lr(model_name),
                     schedule_b=0.25, batch=batch, eval_fn=evaluate, eval_every=eval_every, seed=seed,
                     progress=progress)
    return _finish(model_name, model, fit, clean, best["out"], {"keep": keep})


@dataclass
class OccupancyResult:
    """3-D occupancy fitting: IoU of the thresholded prediction, parameter count, seconds, the fit."""

    model: str
    iou: float
    n_params: int
    seconds: float
    fit: FitResult = field(repr=False)


def iou(pred: np.ndarray, target: np.ndarray, threshold: float = 0.5) -> float:
    """Intersection over union of ``pred > threshold`` and ``target > 0.5`` (1 when both are empty)."""
    a, b = np.asarray(pred) > threshold, np.asarray(target) > 0.5
    union = np.logical_or(a, b).sum()
    return 1.0 if union == 0 else float(np.logical_and(a, b).sum() / union)


def fit_occupancy(shape="gyroid_sphere", model_name: str = "cosmo_rc", *, grid: int = 64, iters: int = 500,
                  lr: float | None = None, batch: int | None = 16384, device="cpu", dtype="float32", seed: int = 0,
                  progress=None, **model_kwargs) -> OccupancyResult:
    """Fits an occupancy grid (``data.SHAPES`` name or a ``(D, H, W)`` 0/1 array) and returns its IoU.

    Raises:
        ValueError: unknown shape, or an array that is not 3-D.
    """
    grid_values = occupancy(shape, grid) if isinstance(shape, str) else np.asarray(shape, dtype=np.float32)
    if grid_values.ndim != 3 or grid_values.size == 0:
        raise ValueError(f"shape: expected a shape name or a non-empty (D, H, W) grid, got {grid_values.shape}")
    torch.manual_seed(seed)
    place = {"device": device, "dtype": resolve_dtype(dtype)}
    coords = get_coords(*grid_values.shape, **place)
    values = torch.as_tensor(grid_values.reshape(-1, 1), **place)
    model_kwargs.setdefault("prior", "none")
    model = build_model(model_name, 3, 1, None, **place, **model_kwargs)
    fit = fit_signal(model, coords, values, iters=iters, lr=lr or default_lr(model_name), batch=batch,
                     eval_fn=lambda m: math.nan, eval_every=iters, seed=seed, progress=progress)
    with torch.no_grad():
        pred = torch.cat([model(c) for c in coords.split(65536)]).cpu().numpy().reshape(grid_values.shape)
    return OccupancyResult(model_name, iou(pred, grid_values), n_real_parameters(model), fit.seconds, fit)
