"""The paper's experiments at configurable scale, each with its random-subset baseline in the same run.

- ``error_scaling``: Fig. 2, compression error of the sigmoid benchmark vs d, with fitted slopes.
- ``lth_experiment``: Fig. 4, the dynamical lottery ticket (full vs compressed vs random sub-network).
- ``attention_experiment``: the attention appendix, the same comparison for the heads of an attention layer.
- ``deep_experiment``: every wide layer of a deep MLP compressed, against random subsets and torch-pruning.
- ``dataset_experiment``: Fig. 3, training on the full, compressed and a random data subset.
- ``scaling_law_experiment``: Fig. 5 (dataset-size sweep), exponent of ``d' = 16 sqrt(d)`` compression.
"""
from __future__ import annotations

import math
import time
from collections.abc import Iterable, Sequence

import numpy as np
import torch

from ._checks import check_order, check_positive_int
from .attention import (
    InContextRegressor,
    WeightedMultiHeadAttention,
    compress_attention,
    piecewise_linear_episodes,
    random_heads,
)
from .compressor import MomentCompressor
from .data import Teacher, compress_dataset, harmonic_regression, teacher_regression, uniform_cube
from .deep import compress_mlp, dense_mlp, magnitude_prune_mlp, random_mlp_subnetwork
from .networks import attach_compressed_dynamics, compress_two_layer, dense_two_layer, random_subnetwork
from .symmetric import sigmoid_benchmark
from .training import fit_regression, minibatch_order


def fitted_slope(x: Sequence[float], y: Sequence[float]) -> float:
    """Least-squares slope of ``log y`` against ``log x`` (every point counts once)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size < 2 or (y <= 0).any():
        return float("nan")
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def error_scaling(m_list: Iterable[int] = (2,), k_list: Iterable[int] = (2, 4),
                  d_list: Iterable[int] = (2000, 4000, 8000, 16000), ratio: float = 0.1, trials: int = 5,
                  seed: int = 0, n_probes: int = 10, n_random: int = 20, progress=lambda it, **kw: it) -> dict:
    """Compression error of the sigmoid benchmark (Fig. 2) for every (m, k, d) and trial.

    Each trial draws ``w ~ U[-1, 1]^{d x m}`` and probes ``x_a ~ N(0, I_m)`` (``n_probes`` of them),
    compresses to ``d' = max(ceil(ratio d), N_{m,k})`` by moment matching, and, as the baseline,
    keeps a uniformly random subset of the same size (weights d/d'); ``random_error`` is the mean
    absolute error over ``n_random`` independent subsets.

    Returns:
        ``{"records": [{"m", "k", "d", "trial", "target", "error", "random_error", "seconds"}],
        "slopes": {"m{m}_k{k}": slope of log error vs log d over all trials},
        "reference": {"m{m}_k{k}": -((k + 1) / m + 0.5)}}``.
    """
    m_list, k_list, d_list = list(m_list), [check_order(k) for k in k_list], list(d_list)
    trials = check_positive_int(trials, "trials")
    n_random = check_positive_int(n_random, "n_random")
    rng = np.random.default_rng(seed)
    records = []
    jobs = [(m, k, d, t) for m in m_list for k in k_list for d in d_list for t in range(trials)]
    for m, k, d, t in progress(jobs, total=len(jobs), desc="error scaling"):
        W = uniform_cube(d, m, rng)
        X = rng.standard_normal((n_probes, m))
        exact = sigmoid_benchmark(W, None, X)
        mc = MomentCompressor(k=k, ratio=ratio, random_state=int(rng.integers(2**31 - 1))).fit(W)
        approx = sigmoid_benchmark(mc.points_, mc.weights_, X)
        random_errors = [abs(sigmoid_benchmark(W[rng.choice(d, size=mc.support_.size, replace=False)], None, X)
                             - exact) for _ in range(n_random)]
        records.append({"m": m, "k": k, "d": d, "trial": t, "target": int(mc.support_.size),
                        "error": abs(approx - exact), "random_error": float(np.mean(random_errors)),
                        "seconds": mc.timings_["total"]})
    slopes, reference = {}, {}
    for m in m_list:
        for k in k_list:
            rows = [r for r in records if r["m"] == m and r["k"] == k]
            # a zero error (exact to the last bit) is floored at the float64 resolution for the log
            slopes[f"m{m}_k{k}"] = fitted_slope([r["d"] for r in rows], [max(r["error"], 1e-17) for r in rows])
            reference[f"m{m}_k{k}"] = -((k + 1) / m + 0.5)
    return {"records": records, "slopes": slopes, "reference": reference}


def curve_deviation(curve: Sequence[tuple[int, float]], reference: Sequence[tuple[int, float]]) -> float:
    """``max_t |log L(t) - log L_ref(t)|`` over the logged steps both curves share."""
    ref = dict(reference)
    return float(max(abs(math.log(v) - math.log(ref[t])) for t, v in curve if t in ref))


def late_gap(curve: Sequence[tuple[int, float]], reference: Sequence[tuple[int, float]],
             fraction: float = 0.5) -> float:
    """Mean of ``|log L(t) - log L_ref(t)|`` over the last ``fraction`` of the shared logged steps (t > 0)."""
    ref = dict(reference)
    gaps = [abs(math.log(v) - math.log(ref[t])) for t, v in curve if t in ref and t > 0]
    return float(np.mean(gaps[-max(1, math.ceil(fraction * len(gaps))):]))


def lth_experiment(width: int = 4000, target_width: int = 400, k: int = 4, n_train: int = 20000,
                   n_test: int = 10000, noise: float = 0.2, epochs: int = 60, batch_size: int = 512,
                   optimizer: str = "adam", lr: float = 1e-3, log_every: int = 5, n_random: int = 4,
                   n_random_init: int = 50, seed: int = 0, device: str | torch.device = "cpu",
                   **compressor_options) -> dict:
    """The dynamical lottery ticket (Fig. 4): full net vs its moment-compressed net vs random sub-networks.

    A ReLU net of ``width`` neurons (PyTorch default init) is compressed to ``target_width``
    weighted neurons (order k on the objects ``(v, w, b)``, m = 4) and trained with the
    ``1/c_j`` gradient rule; the baselines keep ``target_width`` random neurons (c = 1):
    ``n_random`` independent draws trained as they are, and one draw with outgoing weights
    rescaled by ``width / target_width``. All nets see the same minibatch order on the
    cylindrical-harmonic regression (train targets with N(0, noise^2), test targets clean).
    The epoch-0 mismatch of the random baseline is the mean over ``n_random_init`` draws.

    Returns:
        ``{"curves": {method: [(step, test MSE)]}`` (``"random"`` is the first draw),
        ``"epoch_steps": int``, ``"deviation"`` and ``"gap"``: ``{method: max_t resp. late-epoch mean of
        |log L - log L_full|}`` (random: mean over its draws), ``"initial_rmse_to_full": {method: RMSE of
        predictions vs the full net at step 0}``, ``"output_std"``: std of the full net's test predictions
        at step 0, ``"widths"``, ``"compression_seconds"``}``.
    """
    dev = torch.device(device)
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    X, y, _ = harmonic_regression(check_positive_int(n_train, "n_train"), noise, rng)
    X_test, _, y_test = harmonic_regression(check_positive_int(n_test, "n_test"), 0.0, rng)
    as_t = lambda a: torch.as_tensor(a, dtype=torch.float32, device=dev)  # noqa: E731
    X, y, X_test, y_test = as_t(X), as_t(y), as_t(X_test), as_t(y_test)

    full = dense_two_layer(2, width, 1, generator=gen).to(dev)
    t0 = time.perf_counter()
    compressed = compress_two_layer(full, k=k, target_width=target_width, random_state=seed, **compressor_options)
    seconds = time.perf_counter() - t0
    draws = [random_subnetwork(full, target_width, rng=rng) for _ in range(check_positive_int(n_random, "n_random"))]
    nets = {"full": full, "compressed": compressed, "random_rescaled": random_subnetwork(full, target_width, rng=rng,
                                                                                         rescale=True)}
    nets.update({f"random_{i}": net for i, net in enumerate(draws)})
    with torch.no_grad():
        ref = full(X_test)
        rmse = lambda net: float(((net(X_test) - ref) ** 2).mean().sqrt())  # noqa: E731
        initial = {name: rmse(net) for name, net in nets.items() if not name.startswith("random_")}
        initial["random_rescaled"] = rmse(nets["random_rescaled"])
        initial["random"] = float(np.mean([rmse(random_subnetwork(full, target_width, rng=rng))
                                           for _ in range(check_positive_int(n_random_init, "n_random_init"))]))
        output_std = float(ref.std())
    attach_compressed_dynamics(compressed)
    steps = minibatch_order(X.shape[0], batch_size, epochs, gen)
    per_epoch = math.ceil(X.shape[0] / batch_size)
    log_at = {e * per_epoch for e in range(0, epochs + 1, max(1, log_every))} | {len(steps)}
    trained = {name: fit_regression(net, X, y, X_test, y_test, steps, optimizer, lr, log_at)
               for name, net in nets.items()}
    deviation = {name: curve_deviation(c, trained["full"]) for name, c in trained.items()}
    gap = {name: late_gap(c, trained["full"]) for name, c in trained.items()}
    random_names = [f"random_{i}" for i in range(len(draws))]
    for table in (deviation, gap):
        table["random"] = float(np.mean([table.pop(name) for name in random_names]))
    curves = {name: c for name, c in trained.items() if name not in random_names}
    curves["random"] = trained["random_0"]
    return {
        "curves": curves,
        "epoch_steps": per_epoch,
        "deviation": deviation,
        "gap": gap,
        "initial_rmse_to_full": initial,
        "output_std": output_std,
        "widths": {name: nets["random_0" if name == "random" else name].width for name in curves},
        "compression_seconds": seconds,
    }


def dataset_experiment(d: int = 5000, target_size: int = 500, k: int = 4, teacher_width: int = 50,
                       student_width: int = 50, noise: float = 3.0, steps: int = 400, lr: float = 1e-2,
                       optimizer: str = "adam", n_test: int = 10000, log_every: int = 20, n_random: int = 1,
                       seed: int = 0, device: str | torch.device = "cpu", **compressor_options) -> dict:
    """Dataset compression (Fig. 3): one student trained on the full, compressed and random-subset data.

    Objects are ``(x1, x2, y)`` from a random ReLU teacher with label noise N(0, noise^2); the
    compressed set is trained with the weighted loss ``sum c_j l_j / sum c``, each of ``n_random``
    random subsets (same size) with the plain mean. Full-batch updates, the same student
    initialisation for all.

    Returns:
        ``{"curves": {method: [(step, clean test MSE)]}`` (``"random"``: the first draw), ``"final":
        {method: MSE}`` (``"random"``: the mean over the draws), ``"sizes": {method: n}}``.
    """
    dev = torch.device(device)
    rng = np.random.default_rng(seed)
    teacher = Teacher(2, teacher_width, rng)
    X, y, _ = teacher_regression(check_positive_int(d, "d"), noise, teacher, rng)
    X_test, _, y_test = teacher_regression(check_positive_int(n_test, "n_test"), 0.0, teacher, rng)
    Xc, yc, wc = compress_dataset(X, y, k=k, target_size=target_size, random_state=seed, **compressor_options)
    subsets = [rng.choice(d, size=wc.size, replace=False) for _ in range(check_positive_int(n_random, "n_random"))]
    as_t = lambda a: torch.as_tensor(a, dtype=torch.float32, device=dev)  # noqa: E731
    sets = {"full": (X, y, None), "compressed": (Xc, yc, wc)}
    sets.update({f"random_{i}": (X[sub], y[sub], None) for i, sub in enumerate(subsets)})
    init = dense_two_layer(2, student_width, 1, generator=torch.Generator().manual_seed(seed)).state_dict()
    log_at = set(range(0, steps + 1, max(1, log_every))) | {steps}
    trained = {}
    for name, (Xs, ys, ws) in sets.items():
        student = dense_two_layer(2, student_width, 1)
        student.load_state_dict(init)
        student.to(dev)
        trained[name] = fit_regression(student, as_t(Xs), as_t(ys), as_t(X_test), as_t(y_test), [None] * steps,
                                       optimizer, lr, log_at, sample_weight=None if ws is None else as_t(ws))
    randoms = [trained.pop(f"random_{i}") for i in range(len(subsets))]
    final = {n: c[-1][1] for n, c in trained.items()}
    final["random"] = float(np.mean([c[-1][1] for c in randoms]))
    return {"curves": {**trained, "random": randoms[0]}, "final": final,
            "sizes": {"full": d, "compressed": int(wc.size), "random": int(wc.size)}}


def scaling_law_experiment(ds: Sequence[int] = (1000, 2000, 4000, 8000, 16000), rule: str = "16sqrt", k: int = 6,
                           teacher_width: int = 50, student_width: int = 50, noise: float = 3.0, steps: int = 400,
                           lr: float = 1e-2, optimizer: str = "adamw", seed: int = 0,
                           device: str | torch.device = "cpu") -> dict:
    """Neural scaling law under compression (Fig. 5, dataset-size axis).

    For each d, a student is trained on d teacher points and on the same points compressed to
    ``d' = floor(16 sqrt(d))`` (rule ``"16sqrt"``); a power law ``L = a n^(-alpha)`` is fitted to the
    clean test MSE against the number of training points n (d for full data, d' for compressed).
    The paper predicts ``alpha_compressed ~ 2 alpha_full``.

    Returns:
        ``{"records": [{"d", "target", "full", "compressed"}], "alpha_full", "alpha_compressed", "ratio"}``.
    """
    if rule != "16sqrt":
        raise ValueError(f"rule: expected '16sqrt', got {rule!r}")
    records = []
    for d in ds:
        target = int(16 * math.sqrt(d))
        out = dataset_experiment(d=d, target_size=target, k=k, teacher_width=teacher_width,
                                 student_width=student_width, noise=noise, steps=steps, lr=lr, optimizer=optimizer,
                                 log_every=steps, seed=seed, device=device)
        records.append({"d": d, "target": out["sizes"]["compressed"], "full": out["final"]["full"],
                        "compressed": out["final"]["compressed"]})
    alpha_full = -fitted_slope([r["d"] for r in records], [r["full"] for r in records])
    alpha_comp = -fitted_slope([r["target"] for r in records], [r["compressed"] for r in records])
    return {"records": records, "alpha_full": alpha_full, "alpha_compressed": alpha_comp,
            "ratio": alpha_comp / alpha_full if alpha_full else float("nan")}


def attention_experiment(n_heads: int = 4000, target_heads: int = 800, k: int = 3, d_head: int = 2,
                         n_ctx: int = 8, segments: int = 16, steps: int = 250, batch_size: int = 256,
                         optimizer: str = "adam", lr: float = 1e-4, n_test: int = 2560, log_every: int = 5,
                         n_random: int = 2, n_random_init: int = 20, seed: int = 0,
                         device: str | torch.device = "cpu", **compressor_options) -> dict:
    """The dynamical lottery ticket for attention heads (the paper's attention appendix).

    A causal multi-head attention layer (scalar tokens, heads of width ``d_head``: m = 8 for the defaults)
    regresses random piecewise-linear functions in context. It is compressed to ``target_heads`` weighted
    heads (order ``k``) and trained with the ``1/c_h`` gradient rule; the baselines keep ``target_heads``
    random heads with ``c = 1`` (``n_random`` draws, the official "naive" pruning) and one draw with
    ``c = H / target_heads``. Every net sees the same episodes in the same order; the test episodes are
    fixed (clean query targets). The epoch-0 mismatch of the random baseline (same mass, ``c = H / H'``)
    is the mean over ``n_random_init`` draws.

    Returns:
        The same keys as ``lth_experiment`` (``"curves"``, ``"deviation"``, ``"gap"``,
        ``"initial_rmse_to_full"``, ``"output_std"``, ``"widths"`` in heads, ``"compression_seconds"``).
    """
    dev = torch.device(device)
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    steps, batch_size = check_positive_int(steps, "steps"), check_positive_int(batch_size, "batch_size")
    X, y = piecewise_linear_episodes(steps * batch_size, n_ctx, segments, generator=gen)
    X_test, y_test = piecewise_linear_episodes(check_positive_int(n_test, "n_test"), n_ctx, segments, generator=gen)
    X, y, X_test, y_test = X.to(dev), y.to(dev), X_test.to(dev), y_test.to(dev)
    full = WeightedMultiHeadAttention(1, n_heads, d_head, 1, generator=gen)
    t0 = time.perf_counter()
    compressed = compress_attention(full, k=k, target_heads=target_heads, random_state=seed, **compressor_options)
    seconds = time.perf_counter() - t0
    layers = {"full": full, "compressed": compressed,
              "random_rescaled": random_heads(full, target_heads, rng, rescale=True)}
    layers.update({f"random_{i}": random_heads(full, target_heads, rng)
                   for i in range(check_positive_int(n_random, "n_random"))})
    nets = {name: InContextRegressor(layer).to(dev) for name, layer in layers.items()}
    with torch.no_grad():
        ref = nets["full"](X_test)
        rmse = lambda net: float(((net(X_test) - ref) ** 2).mean().sqrt())  # noqa: E731
        initial = {name: rmse(nets[name]) for name in ("full", "compressed", "random_rescaled")}
        draws = [InContextRegressor(random_heads(full, target_heads, rng, rescale=True)).to(dev)
                 for _ in range(check_positive_int(n_random_init, "n_random_init"))]
        initial["random"] = float(np.mean([rmse(net) for net in draws]))
        output_std = float(ref.std())
    attach_compressed_dynamics(compressed)
    order = [torch.arange(i * batch_size, (i + 1) * batch_size, device=dev) for i in range(steps)]
    log_at = set(range(0, steps + 1, max(1, log_every))) | {steps}
    trained = {name: fit_regression(net, X, y, X_test, y_test, order, optimizer, lr, log_at)
               for name, net in nets.items()}
    deviation = {name: curve_deviation(c, trained["full"]) for name, c in trained.items()}
    gap = {name: late_gap(c, trained["full"]) for name, c in trained.items()}
    random_names = [name for name in trained if name.startswith("random_") and name != "random_rescaled"]
    for table in (deviation, gap):
        table["random"] = float(np.mean([table.pop(name) for name in random_names]))
    curves = {name: c for name, c in trained.items() if name not in random_names}
    curves["random"] = trained["random_0"]
    return {"curves": curves, "epoch_steps": 1, "deviation": deviation, "gap": gap,
            "initial_rmse_to_full": initial, "output_std": output_std,
            "widths": {name: layers["random_0" if name == "random" else name].n_heads for name in curves},
            "compression_seconds": seconds}


def deep_experiment(widths: Sequence[int] = (2000, 4, 2000), target_widths: Sequence[int | None] = (200, None, 200),
                    k: int = 3, n_train: int = 4000, n_test: int = 4000, noise: float = 0.1, steps: int = 300,
                    batch_size: int = 256, optimizer: str = "adam", lr: float = 1e-3, log_every: int = 20,
                    n_random: int = 2, n_random_init: int = 20, teacher_width: int = 50, seed: int = 0,
                    device: str | torch.device = "cpu", **compressor_options) -> dict:
    """A deep tanh MLP ``2 -> widths -> 1`` with every wide layer compressed, against two baselines.

    The student (PyTorch default init) regresses a random two-layer ReLU teacher (``teacher_width`` units,
    targets standardised on the training set, then N(0, noise^2) added to the training targets). Methods:
    ``compressed`` (``compress_mlp``, order ``k``, trained with the product ``1/c`` rule), ``random`` (uniform
    subsets of the same widths and mass, ``c = d / d'``, same rule; ``n_random`` trained draws, the epoch-0
    mismatch averaged over ``n_random_init`` draws) and, when ``torch_pruning`` is importable, ``magnitude``
    (torch-pruning L1 structured pruning to the same widths, plain optimiser). All see the same minibatches.

    Returns:
        ``{"curves": {method: [(step, clean test MSE)]}``, ``"deviation"``, ``"gap"`` (as in ``lth_experiment``;
        random: mean over draws), ``"initial_rmse_to_full"``, ``"output_std"``, ``"widths": {method: hidden
        widths}``, ``"compression_seconds"``, ``"magnitude_available": bool}``.
    """
    dev = torch.device(device)
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed)
    teacher = Teacher(2, check_positive_int(teacher_width, "teacher_width"), rng)
    X, _, y = teacher_regression(check_positive_int(n_train, "n_train"), 0.0, teacher, rng)
    X_test, _, y_test = teacher_regression(check_positive_int(n_test, "n_test"), 0.0, teacher, rng)
    mean, std = y.mean(), y.std()
    y, y_test = (y - mean) / std + noise * rng.standard_normal(y.size), (y_test - mean) / std
    as_t = lambda a: torch.as_tensor(a, dtype=torch.float32, device=dev)  # noqa: E731
    X, y, X_test, y_test = as_t(X), as_t(y), as_t(X_test), as_t(y_test)

    full = dense_mlp((2, *widths, 1), torch.nn.Tanh, generator=gen).to(dev)
    t0 = time.perf_counter()
    compressed = compress_mlp(full, target_widths, k=k, random_state=seed, **compressor_options)
    seconds = time.perf_counter() - t0
    nets = {"full": full, "compressed": compressed}
    nets.update({f"random_{i}": random_mlp_subnetwork(full, target_widths, rng)
                 for i in range(check_positive_int(n_random, "n_random"))})
    try:
        nets["magnitude"] = magnitude_prune_mlp(full, target_widths)
    except ImportError:
        pass
    with torch.no_grad():
        ref = full(X_test)
        rmse = lambda net: float(((net(X_test) - ref) ** 2).mean().sqrt())  # noqa: E731
        initial = {name: rmse(net) for name, net in nets.items() if not name.startswith("random_")}
        initial["random"] = float(np.mean([rmse(random_mlp_subnetwork(full, target_widths, rng))
                                           for _ in range(check_positive_int(n_random_init, "n_random_init"))]))
        output_std = float(ref.std())
    for name, net in nets.items():
        if name != "magnitude":
            attach_compressed_dynamics(net)
    order = minibatch_order(X.shape[0], check_positive_int(batch_size, "batch_size"),
                            math.ceil(check_positive_int(steps, "steps") * batch_size / X.shape[0]), gen)[:steps]
    log_at = set(range(0, steps + 1, max(1, log_every))) | {steps}
    trained = {name: fit_regression(net, X, y, X_test, y_test, order, optimizer, lr, log_at)
               for name, net in nets.items()}
    deviation = {name: curve_deviation(c, trained["full"]) for name, c in trained.items()}
    gap = {name: late_gap(c, trained["full"]) for name, c in trained.items()}
    random_names = [name for name in trained if name.startswith("random_")]
    for table in (deviation, gap):
        table["random"] = float(np.mean([table.pop(name) for name in random_names]))
    curves = {name: c for name, c in trained.items() if name not in random_names}
    curves["random"] = trained["random_0"]
    return {"curves": curves, "deviation": deviation, "gap": gap, "initial_rmse_to_full": initial,
            "output_std": output_std,
            "widths": {name: nets["random_0" if name == "random" else name].hidden_widths for name in curves},
            "compression_seconds": seconds, "magnitude_available": "magnitude" in nets}
