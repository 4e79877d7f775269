"""The reproduction benchmark ``energycp``, registered for the ``iclr26-bench`` runner.

CPU scales (smoke/quick/full) run the spec's experiment on the embedded corrupted-digits logits:
tuning of ``(T_E, beta)`` on a 300-point split disjoint from the 779-point evaluation pool, then
paired trials (500 calibration / 279 test, alpha = 0.05) of the four base scores, their energy
versions and the entropy-weight ablation, plus OOD set sizes, a degeneracy check (beta = 1e-9),
equal-work performance rows (MAPIE's APS and LAC; TorchCP's LAC, APS and RAPS when installed) and
the peak memory of ``predict_set``. ``paper`` runs the same protocol on logits the user computed from
local datasets (see ``PAPER_FILES``).
"""
from __future__ import annotations

import importlib.util
import pathlib
import time
from dataclasses import dataclass

import numpy as np
from iclr26_shared.bench import Benchmark, Claim, Result, check_scale, derive_seeds

from .datasets import load_logits, make_digits_logits, tune_pool_split
from .predictor import EnergyConformalClassifier
from .scores import BASE_SCORES
from .tuning import BETA_GRID, T_GRID, tune_energy

PAPER = "Softmax is not Enough (for Adaptive Conformal Classification)"
PACKAGE = "iclr26-energycp"
RAPS_KW = {"penalty": 0.2, "kreg": 2}
SAPS_KW = {"saps_weight": 0.2}
WEIGHTS = {"base": False, "energy": True, "entropy": "entropy"}
PERF_SHAPE = (20_000, 1_000)
PAPER_FILES = {  # name -> (file under <data root>/energycp/, n_tune, n_cal, n_test)
    "cifar100_resnet56": ("cifar100_resnet56.npz", 1_000, 4_500, 4_500),
    "imagenet_resnet50": ("imagenet_resnet50.npz", 5_000, 20_000, 20_000),
    "imagenet_vitb16": ("imagenet_vitb16.npz", 5_000, 20_000, 20_000),
    "places365_resnet50": ("places365_resnet50.npz", 5_000, 15_000, 16_500),
}
PAPER_OOD = ("cifar100_resnet56", "places365_ood_for_cifar100_resnet56.npz")


@dataclass(frozen=True)
class Protocol:
    """One configuration of the experiment."""

    trials: int  # per seed
    tune_repeats: int
    T_grid: tuple[float, ...]
    beta_grid: tuple[float, ...]
    perf_shapes: tuple[tuple[int, int], ...]
    coverage_band: tuple[float, float]
    n_seeds: int = 1  # derive_seeds(seed, n_seeds): one tuning split, tuning and set of trials per seed


SCALE_PROTOCOL = {
    "smoke": Protocol(3, 10, (0.3, 1.0, 3.0), (0.1, 1.0), ((2_000, 100),), (0.935, 0.965)),
    "quick": Protocol(10, 100, T_GRID, BETA_GRID, ((5_000, 100), PERF_SHAPE), (0.935, 0.965), n_seeds=5),
    "full": Protocol(20, 100, T_GRID, BETA_GRID, ((5_000, 100), PERF_SHAPE), (0.940, 0.962), n_seeds=10),
    "paper": Protocol(10, 100, T_GRID, BETA_GRID, ((5_000, 100), PERF_SHAPE), (0.940, 0.962)),
}
EFFICIENCY_NEEDS = (("raps", 0.95, "0.866"), ("saps", 0.97, "0.948"))
OOD_NEEDS = (("raps", 1.08, "1.44"), ("saps", 1.08, "1.54"), ("lac", 1.05, "1.10"), ("aps", 1.0, "1.02"))
SSCV_MARGINS = (("raps", 0.0, "0.060 vs 0.087"), ("saps", -0.01, "0.034 vs 0.044"))


def _on(device: str, a: np.ndarray):
    """``a`` as is on the CPU; a float64/int64 torch tensor on ``device`` otherwise."""
    if device == "cpu":
        return a
    import torch

    return torch.as_tensor(a, device=device)


def _np(x) -> np.ndarray:
    return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)


def _score_kwargs(score: str) -> dict:
    return RAPS_KW if score == "raps" else SAPS_KW if score == "saps" else {}


def tune_all(tune_z, tune_y, alpha: float, proto: Protocol, seed: int) -> dict[str, tuple[float, float]]:
    """Tuned ``(T_E, beta)`` per base score on the tuning split (random_state = 10000 * seed)."""
    out = {}
    for score in BASE_SCORES:
        res = tune_energy(tune_z, tune_y, score=score, alpha=alpha, T_grid=proto.T_grid, beta_grid=proto.beta_grid,
                          n_repeats=proto.tune_repeats, random_state=10_000 * seed, **_score_kwargs(score))
        out[score] = (res.T_energy, res.beta)
    return out


def run_trials(pool_z, pool_y, ood_z, tuned, alpha: float, n_cal: int, n_test: int, trials: int, seed: int,
               device: str) -> dict[tuple[str, str], dict[str, np.ndarray]]:
    """Paired trials: per trial, one split and one ``u`` stream (seed ``100 + t + 10000 seed``) shared by every
    method. Returns ``{(score, weight): {metric: (trials,) array}}`` with coverage, size, sscv, covgap and
    ood_size."""
    n = pool_z.shape[0]
    if n_cal + n_test > n:
        raise ValueError(f"n_cal + n_test: expected at most {n} pool rows, got {n_cal} + {n_test}")
    out: dict[tuple[str, str], dict[str, list]] = {}
    ood = None if ood_z is None else _on(device, ood_z)
    for t in range(trials):
        trial_seed = 100 + t + 10_000 * seed
        idx = np.random.default_rng(trial_seed).permutation(n)
        cal, test = idx[:n_cal], idx[n_cal:n_cal + n_test]
        zc, yc, zt = _on(device, pool_z[cal]), _on(device, pool_y[cal]), _on(device, pool_z[test])
        for score in BASE_SCORES:
            T_E, beta = tuned[score]
            for wname, energy in WEIGHTS.items():
                model = EnergyConformalClassifier(score, energy=energy, alpha=alpha, T_energy=T_E, beta=beta,
                                                  random_state=trial_seed, **_score_kwargs(score)).fit(zc, yc)
                m = model.evaluate(zt, pool_y[test])
                if ood is not None:
                    m["ood_size"] = float(_np(model.predict_set(ood)).sum(1).mean())
                rec = out.setdefault((score, wname), {})
                for k, v in m.items():
                    rec.setdefault(k, []).append(v)
    return {key: {k: np.asarray(v) for k, v in rec.items()} for key, rec in out.items()}


def degeneracy(pool_z, pool_y, tuned, alpha: float, n_cal: int, seed: int, device: str) -> dict[str, float]:
    """Trial 0 with ``beta = 1e-9``, ``randomized=False``: fraction of test points whose energy set equals
    the base set, per score."""
    idx = np.random.default_rng(100 + 10_000 * seed).permutation(pool_z.shape[0])
    cal, test = idx[:n_cal], idx[n_cal:]
    zc, yc, zt = _on(device, pool_z[cal]), _on(device, pool_y[cal]), _on(device, pool_z[test])
    same = {}
    for score in BASE_SCORES:
        sets = [_np(EnergyConformalClassifier(score, energy=energy, alpha=alpha, T_energy=tuned[score][0],
                                              beta=1e-9, randomized=False, **_score_kwargs(score))
                    .fit(zc, yc).predict_set(zt)) for energy in (False, True)]
        same[score] = float((sets[0] == sets[1]).all(1).mean())
    return same


class _SoftmaxOfLogits:
    """A prefit scikit-learn-style classifier whose input *is* the logits: ``predict_proba = softmax``."""

    _estimator_type = "classifier"

    def __init__(self, n_classes: int):
        self.classes_ = np.arange(n_classes)
        self.n_features_in_ = n_classes

    def fit(self, X, y):
        return self

    def predict_proba(self, X):
        z = np.asarray(X, dtype=np.float64)
        e = np.exp(z - z.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    def predict(self, X):
        return np.asarray(X).argmax(1)

    def get_params(self, deep: bool = True):
        return {"n_classes": len(self.classes_)}

    def set_params(self, **params):
        return self

    def __sklearn_tags__(self):
        from sklearn.utils import ClassifierTags, Tags, TargetTags

        return Tags(estimator_type="classifier", target_tags=TargetTags(required=True),
                    classifier_tags=ClassifierTags())


def _synthetic_logits(shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """ImageNet-like synthetic logits of a calibrated model: N(0, 1) noise plus a boost of
    ``(1, 0.8, 0.7, 0.6, 0.5) * (log K + U(2, 8))`` on 5 random classes (the confusable ones), and labels
    drawn from ``softmax(z)`` itself (Gumbel-max). Top-1 accuracy about 0.75-0.79; at alpha = 0.05 base
    LAC / RAPS sets of 2.4 / 2.6-3.0 labels (APS 4.3 of 100, 33 of 1,000), not most of the labels."""
    n, K = shape
    rng = np.random.default_rng(12345)
    z = rng.normal(0.0, 1.0, size=(n, K))
    top = np.log(K) + 2.0 + 6.0 * rng.random(n)
    hot = rng.integers(0, K, (n, 5))
    for j, f in enumerate((1.0, 0.8, 0.7, 0.6, 0.5)):
        z[np.arange(n), hot[:, j]] += f * top
    y = (z - np.log(-np.log(rng.random((n, K))))).argmax(1)
    return z, y


def _cpu_seconds(fn, *args):
    """``(fn(*args), CPU seconds)``, timed with ``time.process_time`` so that other load on the machine does not
    count."""
    start = time.process_time()
    out = fn(*args)
    return out, time.process_time() - start


def _ours(score: str, energy: bool, z, y, alpha: float) -> float:
    """Mean set size of fit + predict_set (on the same rows) with a fixed-parameter score."""
    model = EnergyConformalClassifier(score, energy=energy, alpha=alpha, T_energy=1.0, beta=1.0,
                                      random_state=0, **_score_kwargs(score)).fit(z, y)
    return float(model.predict_set(z).sum(1).mean())


def _mapie(score: str, z, y, alpha: float) -> float:
    """The same with MAPIE's ``SplitConformalClassifier`` (prefit, on the logits through a softmax)."""
    from mapie.classification import SplitConformalClassifier

    mapie = SplitConformalClassifier(_SoftmaxOfLogits(z.shape[1]), confidence_level=1 - alpha,
                                     conformity_score=score, prefit=True, random_state=0).conformalize(z, y)
    return float(mapie.predict_set(z)[1][:, :, 0].sum(1).mean())


def _torchcp(score: str, z, y, alpha: float) -> float:
    """The same with TorchCP's score of the same name and fixed parameters (``LAC``, ``APS``, or
    ``RAPS(penalty=0.2, kreg=2)``; randomised as ours) on the CPU: all-label scores of calibration and test, the
    conformal quantile, and the sets."""
    import torch
    from torchcp.classification import score as tcp

    fn = {"lac": lambda: tcp.LAC(), "aps": lambda: tcp.APS(randomized=True),
          "raps": lambda: tcp.RAPS(randomized=True, **RAPS_KW)}[score]()
    logits, labels = torch.as_tensor(z), torch.as_tensor(y)
    cal = fn(logits, labels)
    k = int(np.ceil((len(y) + 1) * (1 - alpha)))
    q = torch.kthvalue(cal, k).values
    return float((fn(logits) <= q).sum(1).double().mean())


def predict_set_peak_arrays(shape: tuple[int, int] = (5_000, 100)) -> dict[str, float]:
    """Peak new memory of ``predict_set`` (tracemalloc) in float64 (n, K) arrays, per base score with the energy
    weight, on synthetic logits (the spec's bound is 3)."""
    import tracemalloc

    z, y = _synthetic_logits(shape)
    out = {}
    for score in BASE_SCORES:
        model = EnergyConformalClassifier(score, alpha=0.05, T_energy=1.0, beta=1.0, random_state=0,
                                          **_score_kwargs(score)).fit(z, y)
        tracemalloc.start()
        try:
            model.predict_set(z)
            out[f"predict_set_peak_nK_arrays_{score}"] = tracemalloc.get_traced_memory()[1] / z.nbytes
        finally:
            tracemalloc.stop()
    return out


def performance(shapes: tuple[tuple[int, int], ...], alpha: float = 0.05) -> tuple[list[dict], dict[str, float], str]:
    """CPU seconds and mean set size of fit + predict_set on synthetic (n, K) logits of a calibrated model, for
    equal work only: energy RAPS and base RAPS (lambda = 0.2, k_reg = 2, fixed), base APS and LAC; MAPIE's
    APS and LAC scores on the same arrays (MAPIE's "raps" holds out 20% and searches lambda and k*, which is
    other work, so it is not timed), and TorchCP's LAC, APS and RAPS (the same fixed lambda and k_reg) when
    torchcp is installed (opt-in). Keys of the timings: ``<method>_NxK``."""
    anchors = {"mapie": importlib.util.find_spec("mapie") is not None,
               "torchcp": importlib.util.find_spec("torchcp") is not None}
    for name, module in (("mapie", "mapie.classification"), ("torchcp", "torchcp.classification.score")):
        if anchors[name]:
            importlib.import_module(module)  # imported before timing: an import is not the anchor's work
    runs = [("ours_energy_raps", lambda z, y: _ours("raps", True, z, y, alpha)),
            ("ours_raps", lambda z, y: _ours("raps", False, z, y, alpha)),
            ("ours_aps", lambda z, y: _ours("aps", False, z, y, alpha)),
            ("ours_lac", lambda z, y: _ours("lac", False, z, y, alpha))]
    if anchors["mapie"]:
        runs += [("mapie_aps", lambda z, y: _mapie("aps", z, y, alpha)),
                 ("mapie_lac", lambda z, y: _mapie("lac", z, y, alpha))]
    if anchors["torchcp"]:
        runs += [(f"torchcp_{score}", lambda z, y, score=score: _torchcp(score, z, y, alpha))
                 for score in ("raps", "aps", "lac")]
    rows, timings = [], {}
    for shape in shapes:
        z, y = _synthetic_logits(shape)
        tag = f"{shape[0]}x{shape[1]}"
        for name, fn in runs:
            size, seconds = _cpu_seconds(fn, z, y)
            timings[f"{name}_{tag}"] = seconds
            rows.append({"method": f"perf {name} {tag}", "cpu_seconds": seconds, "size": size})
    note = "; ".join(f"{a} is not installed (pip install {a})" for a, ok in anchors.items() if not ok)
    return rows, timings, note


def _mean(res, score, wname, metric) -> float:
    return float(res[(score, wname)][metric].mean())


def ood_ratio_of_ratios(res, score: str) -> float:
    """``(OOD size / ID size) of the energy score / the same of the base score``, over the trials of ``res``."""
    return (_mean(res, score, "energy", "ood_size") / _mean(res, score, "energy", "size")) / (
        _mean(res, score, "base", "ood_size") / _mean(res, score, "base", "size"))


def seed_claims(per_seed: list[dict], seeds: list[int]) -> list[Claim]:
    """Criteria 2 (size, the central claim), 4 (OOD) and 5 (SSCV) paired over seeds: one tuning and set of
    trials per seed in ``per_seed``.

    Size: per seed, ``log`` of the base score's mean size over the energy score's; holds when the 90%
    interval's lower end exceeds ``-log`` of the spec's ratio threshold (0.95 RAPS, 0.97 SAPS).

    OOD: per seed, ``log`` of the energy score's OOD/ID size ratio minus that of the base score; holds when
    the 90% interval's lower end exceeds ``log`` of the spec's ratio-of-ratios threshold. SSCV: energy minus
    base SSCV per seed (lower is better), with the spec's margins.
    """
    c: list[Claim] = []
    for score, need, proto in EFFICIENCY_NEEDS:  # the central claim, paired over seeds
        c.append(Claim.paired(f"2.efficiency.{score}_size_paired", f"smaller sets (prototype ratio {proto})",
                              [-np.log(_mean(r, score, "energy", "size")) for r in per_seed],
                              [-np.log(_mean(r, score, "base", "size")) for r in per_seed], seeds,
                              margin=float(-np.log(need)),
                              what=f"log (base / energy {score.upper()} mean size); threshold -log {need}"))
    if "ood_size" in per_seed[0][("lac", "base")]:
        for score, need, proto in OOD_NEEDS:
            ratio = {w: [np.log(_mean(r, score, w, "ood_size") / _mean(r, score, w, "size")) for r in per_seed]
                     for w in ("energy", "base")}
            c.append(Claim.paired(f"4.ood.{score}_ratio_of_ratios", f"larger OOD sets (prototype {proto})",
                                  ratio["energy"], ratio["base"], seeds, margin=float(np.log(need)),
                                  what=f"log (OOD/ID size) energy - base; threshold log {need}"))
    for score, margin, proto in SSCV_MARGINS:
        c.append(Claim.paired(f"5.sscv.{score}", f"lower SSCV (prototype {proto})",
                              [_mean(r, score, "energy", "sscv") for r in per_seed],
                              [_mean(r, score, "base", "sscv") for r in per_seed], seeds, margin=margin,
                              higher_is_better=False, what=f"SSCV energy - base {score.upper()}"))
    return c


def experiment_claims(res, same: dict[str, float] | None, band: tuple[float, float], prefix: str = "",
                      single_run: bool = True) -> list[Claim]:
    """The spec's acceptance criteria 1-6 computed from the trial results (4 and 5 only when ``single_run``;
    over several seeds they come from ``seed_claims``)."""
    c: list[Claim] = []
    main = [(s, w) for s in BASE_SCORES for w in ("base", "energy")]
    covs = [_mean(res, s, w, "coverage") for s, w in main]
    worst = min(float(res[k]["coverage"].min()) for k in main)
    c.append(Claim.at_least(f"{prefix}1.validity.min_mean_coverage", "coverage >= 1 - alpha = 0.95 (guarantee)",
                            min(covs), band[0], "min over 8 methods of mean coverage"))
    c.append(Claim.at_most(f"{prefix}1.validity.max_mean_coverage", "coverage close to 1 - alpha",
                           max(covs), band[1], "max over 8 methods of mean coverage"))
    c.append(Claim.at_least(f"{prefix}1.validity.worst_trial", "prototype: 0.900", worst, 0.88,
                            "lowest single-trial coverage"))

    def ratio(score, metric="size"):
        return _mean(res, score, "energy", metric) / _mean(res, score, "base", metric)

    def wins(score):
        return float((res[(score, "energy")]["size"] < res[(score, "base")]["size"]).mean())

    c.append(Claim.at_most(f"{prefix}2.efficiency.raps_size_ratio", "smaller sets (prototype 0.866)", ratio("raps"),
                           0.95, "energy/base RAPS mean size"))
    c.append(Claim.at_most(f"{prefix}2.efficiency.saps_size_ratio", "smaller sets (prototype 0.948)", ratio("saps"),
                           0.97, "energy/base SAPS mean size"))
    c.append(Claim.at_least(f"{prefix}2.efficiency.raps_paired_wins", "prototype 100%", wins("raps"), 0.70,
                            "fraction of trials energy RAPS smaller"))
    c.append(Claim.at_least(f"{prefix}2.efficiency.saps_paired_wins", "prototype 80%", wins("saps"), 0.70,
                            "fraction of trials energy SAPS smaller"))
    c.append(Claim.at_most(f"{prefix}3.no_harm.lac_size_ratio", "prototype 0.994", ratio("lac"), 1.03,
                           "energy/base LAC mean size"))
    c.append(Claim.at_most(f"{prefix}3.no_harm.aps_size_ratio", "prototype 1.010", ratio("aps"), 1.03,
                           "energy/base APS mean size"))
    if single_run and "ood_size" in res[("lac", "base")]:
        for score, need, proto in OOD_NEEDS:
            c.append(Claim.at_least(f"{prefix}4.ood.{score}_ratio_of_ratios", f"larger OOD sets (prototype {proto})",
                                    ood_ratio_of_ratios(res, score), need, "(OOD/ID size) energy / base"))
    if single_run:
        for score, margin, proto in SSCV_MARGINS:
            c.append(Claim.at_most(f"{prefix}5.sscv.{score}", f"lower SSCV (prototype {proto})",
                                   _mean(res, score, "energy", "sscv") - _mean(res, score, "base", "sscv"), -margin,
                                   f"energy - base {score.upper()} SSCV"))
    if same is not None:
        c.append(Claim.at_least(f"{prefix}6.degeneracy.beta_1e-9", "beta -> 0 recovers the base score (100%)",
                                min(same.values()), 0.99, "min over scores of identical-set fraction"))
    return c


def _rows(res, prefix: str = "") -> list[dict]:
    rows = []
    for (score, wname), rec in res.items():
        row = {"method": f"{prefix}{wname}-{score}" if wname != "base" else f"{prefix}{score}"}
        for k, v in rec.items():
            row[k] = float(v.mean())
            if k in ("coverage", "size"):
                row[f"{k}_sd"] = float(v.std(ddof=1)) if v.size > 1 else 0.0
        rows.append(row)
    return rows


def _pool(per_seed: list[dict]) -> dict:
    """The trials of every seed, concatenated per (score, weight) and metric."""
    return {key: {k: np.concatenate([r[key][k] for r in per_seed]) for k in per_seed[0][key]} for key in per_seed[0]}


def _digits(proto: Protocol, device: str, seed: int) -> Result:
    alpha = 0.05
    data = make_digits_logits(0)
    seeds = derive_seeds(seed, proto.n_seeds)
    per_seed, tuned_per_seed = [], []
    for s in seeds:
        tz, ty, pz, py = tune_pool_split(data["pool_logits"], data["pool_labels"], 300, 99 + 10_000 * s)
        tuned_per_seed.append(tune_all(tz, ty, alpha, proto, s))
        per_seed.append(run_trials(pz, py, data["ood_logits"], tuned_per_seed[-1], alpha, 500, 279, proto.trials,
                                   s, device))
        if s == seeds[0]:
            same = degeneracy(pz, py, tuned_per_seed[0], alpha, 500, s, device)
    tuned, res = tuned_per_seed[0], _pool(per_seed)
    claims = experiment_claims(res, same, proto.coverage_band, single_run=len(seeds) == 1)
    if len(seeds) > 1:
        claims += seed_claims(per_seed, seeds)
    perf_rows, timings, note = performance(proto.perf_shapes)
    big = f"{PERF_SHAPE[0]}x{PERF_SHAPE[1]}"
    if f"ours_energy_raps_{big}" in timings:
        claims.append(Claim.at_most(f"perf.ours_energy_raps_cpu_seconds_{big}", "target < 5 s on 2 cores",
                                    timings[f"ours_energy_raps_{big}"], 5.0, "fit+predict_set CPU seconds"))
    for ours, anchor in (("ours_aps", "mapie_aps"), ("ours_lac", "mapie_lac"), ("ours_raps", "torchcp_raps"),
                         ("ours_aps", "torchcp_aps"), ("ours_lac", "torchcp_lac")):
        if f"{anchor}_{big}" in timings:
            claims.append(Claim.at_most(f"perf.{ours[5:]}_time_vs_{anchor}_{big}", "spec: at most 1.5x the anchor",
                                        timings[f"{ours}_{big}"] / timings[f"{anchor}_{big}"], 1.5,
                                        f"ours / {anchor.split('_')[0]} CPU seconds, same fixed score"))
    acc = float((data["pool_logits"].argmax(1) == data["pool_labels"]).mean())
    metrics = {"pool_accuracy": acc, **{f"tuned_T_energy_{s}": v[0] for s, v in tuned.items()},
               **{f"tuned_beta_{s}": v[1] for s, v in tuned.items()},
               **{f"degeneracy_identical_{s}": v for s, v in same.items()},
               **{f"seconds_{k}": v for k, v in timings.items()}, **predict_set_peak_arrays()}
    for score in BASE_SCORES:
        metrics[f"size_ratio_{score}"] = _mean(res, score, "energy", "size") / _mean(res, score, "base", "size")
        for s, t in zip(seeds[1:], tuned_per_seed[1:]):
            metrics[f"tuned_T_energy_{score}_seed{s}"], metrics[f"tuned_beta_{score}_seed{s}"] = t[score]
    if note:
        perf_rows.append({"method": f"perf anchors skipped: {note}"})
    return Result(metrics=metrics, rows=_rows(res) + perf_rows, claims=claims)


def _paper(proto: Protocol, device: str, seed: int) -> Result:
    """The GPU-scale protocol on user-computed logits under ``<data root>/energycp/`` (see README): every file of
    ``PAPER_FILES`` that is there (at least one), each with its tuning split held out first, then per alpha in
    (0.1, 0.05, 0.025, 0.01) the tuning and ``proto.trials`` paired cal/test trials."""
    from iclr26_shared.datasets import data_root  # imports scikit-learn: only when a data folder is read

    folder = data_root() / "energycp"
    present = {name: spec for name, spec in PAPER_FILES.items() if (folder / spec[0]).is_file()}
    if not present:
        raise FileNotFoundError(f"paper scale: expected at least one of the logits files "
                                f"{[f for f, *_ in PAPER_FILES.values()]} (npz with 'logits' and 'labels') in "
                                f"{folder}; compute them with examples/dump_logits.py. Nothing is downloaded.")
    rows, claims, metrics = [], [], {}
    ood_path = folder / PAPER_OOD[1]
    for name, (fname, n_tune, n_cal, n_test) in present.items():
        z, y = load_logits(folder / fname)
        if y is None:
            raise ValueError(f"{fname}: expected labels in the file")
        ood = load_logits(ood_path)[0] if name == PAPER_OOD[0] and ood_path.is_file() else None
        tz, ty, pz, py = tune_pool_split(z, y, n_tune, 99 + 10_000 * seed)
        for alpha in (0.1, 0.05, 0.025, 0.01):
            tuned = tune_all(tz, ty, alpha, proto, seed)
            res = run_trials(pz, py, ood, tuned, alpha, n_cal, min(n_test, pz.shape[0] - n_cal), proto.trials,
                             seed, device)
            tag = f"{name}@{alpha}:"
            rows += _rows(res, tag)
            band = (1 - alpha - 0.01, 1 - alpha + 0.012)
            claims += [cl for cl in experiment_claims(res, None, band, tag)
                       if ".validity." in cl.name or ".efficiency.raps_size" in cl.name or ".ood." in cl.name]
            metrics.update({f"{tag}size_ratio_{s}": _mean(res, s, "energy", "size") / _mean(res, s, "base", "size")
                            for s in BASE_SCORES})
    return Result(metrics=metrics, rows=rows, claims=claims)


def run(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """Benchmark entry: ``scale`` in smoke/quick/full runs the digits experiment, ``paper`` the GPU protocol."""
    check_scale(scale)
    proto = SCALE_PROTOCOL[scale]
    return _paper(proto, device, seed) if scale == "paper" else _digits(proto, device, seed)


BENCHMARK = Benchmark(name="energycp", paper=PAPER, package=PACKAGE, func=run)
