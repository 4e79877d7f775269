"""The reproduction benchmarks, registered under ``iclr26.benchmarks``.

- ``instance-noise.linear`` (criteria 1-6 of the spec): the synthetic linear benchmark, seven
  arms of the same L-BFGS learner (clean, noisy, backward/forward with oracle ``rho``,
  backward/forward with cross-fitted ``rho^``, constant-rate backward) and the Monte-Carlo
  risk-equivalence check. Every arm's L2 strength is chosen by 5-fold cross-validation of its own
  corrected loss on the noisy training labels (plain CE for the clean and noisy arms). When
  cleanlab is installed (extra ``cleanlab``), an eighth arm, cleanlab's ``CleanLearning`` around
  the same logistic regression, is the opt-in anchor of two more claims.
- ``instance-noise.gbm`` (criteria 7-8): region noise on breast-cancer, wine (cultivar 2 vs the
  rest) and digits odd/even (tones: report only), Newton-boosted trees with regularised leaves
  (leaf L2 1, leaf steps capped at 1) and early stopping on the held-out forward-corrected loss,
  evaluated on clean test labels; MLP arms report only. At ``paper`` scale it adds the GPU
  protocol from the local data folder (``ICLR26_DATA``): a ResNet-18 on CIFAR-10 animals vs
  vehicles and a small CNN on Speech Commands "no" vs "yes"; the folders are checked first.

Both run every arm on each seed of ``derive_seeds(seed, n_seeds)`` on the same data, so each
corrected-vs-baseline comparison is a paired claim over those seeds.
"""
from __future__ import annotations

import importlib.util
import pathlib
import warnings
from dataclasses import dataclass

import numpy as np
from iclr26_shared.bench import Benchmark, Claim, Result, derive_seeds
from iclr26_shared.datasets import stratified_split_indices
from sklearn.linear_model import LogisticRegression

from . import data
from .estimate import posterior_model, rho_posterior
from .metrics import clean_accuracy, clean_log_loss, rho_mae, risk_gap
from .models import CorrectedGradientBoosting, CorrectedLogisticRegression, CorrectedMLP, cross_validated_lam
from .noise import instance_only_flip

PAPER = "Resurfacing the Instance-only Dependent Label Noise Model through Loss Correction"
PACKAGE = "iclr26-instance-noise"
RHO_MAX = 0.45
CLEANLAB_NOT_APPLICABLE = ("cleanlab: not applicable, cleanlab is not installed (extra `cleanlab`); "
                           "claims 2c and 5d not judged")


@dataclass(frozen=True)
class LinearConfig:
    """Scale of the linear benchmark: seeds run, training size, most HGB rounds of the (early-stopped) rho
    estimator, MC draws."""

    n_seeds: int
    n: int = 3000
    hgb_iter: int = 500
    draws: int = 2000


LINEAR_SCALES = {"smoke": LinearConfig(2, n=600, hgb_iter=50), "quick": LinearConfig(5),
                 "full": LinearConfig(10), "paper": LinearConfig(10)}


def _linear_arms(b: data.LinearBenchmark, rho_hat: np.ndarray) -> dict[str, tuple[str, np.ndarray | None, np.ndarray]]:
    """arm -> (mode, rho or None, training labels)."""
    constant = np.full(len(b.rho), b.rho.mean())
    return {"clean": ("none", None, b.y_clean), "noisy": ("none", None, b.y_noisy),
            "backward-oracle": ("backward", b.rho, b.y_noisy), "forward-oracle": ("forward", b.rho, b.y_noisy),
            "backward-rho_hat": ("backward", rho_hat, b.y_noisy), "forward-rho_hat": ("forward", rho_hat, b.y_noisy),
            "constant": ("backward", constant, b.y_noisy)}


def _cleanlab_arm(b: data.LinearBenchmark, lam: float, seed: int) -> tuple[float, float]:
    """cleanlab's ``CleanLearning`` (confident learning: prune the likely label errors, refit) around the
    logistic regression with L2 ``lam`` (the objective of ``CorrectedLogisticRegression`` without
    correction); returns its clean-test accuracy and the cosine of its weights with ``w*``."""
    from cleanlab.classification import CleanLearning

    base = LogisticRegression(C=1.0 / (len(b.y_noisy) * lam), tol=1e-10, max_iter=10000)
    model = CleanLearning(base, seed=seed, cv_n_folds=5).fit(b.X, b.y_noisy)
    w = model.clf.coef_[0]
    return clean_accuracy(b.y_test, model.predict(b.X_test)), float(w @ b.w_star / np.linalg.norm(w))


def run_linear(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """Criteria 1-6 on the synthetic linear benchmark; seeds ``derive_seeds(seed, n_seeds)``."""
    cfg = LINEAR_SCALES[scale]
    seeds = derive_seeds(seed, cfg.n_seeds)
    acc: dict[str, list[float]] = {}
    cos: dict[str, list[float]] = {}
    lams: dict[str, list[float]] = {}
    maes, rates = [], []
    gap = None
    with_cleanlab = importlib.util.find_spec("cleanlab") is not None  # the opt-in anchor
    for s in seeds:
        b = data.linear_instance_noise(n=cfg.n, seed=s)
        rho_hat = np.minimum(rho_posterior(b.X, b.y_noisy, estimator=posterior_model(cfg.hgb_iter, s), cv=5,
                                           random_state=s), RHO_MAX)
        maes.append(rho_mae(rho_hat, b.rho))
        rates.append(float(np.mean(b.y_noisy != b.y_clean)))
        for arm, (mode, rho, y) in _linear_arms(b, rho_hat).items():
            lam, _ = cross_validated_lam(b.X, y, rho, mode, random_state=s)
            lams.setdefault(arm, []).append(lam)
            model = CorrectedLogisticRegression(mode=mode, lam=lam, rho=None).fit(b.X, y, rho=rho)
            acc.setdefault(arm, []).append(clean_accuracy(b.y_test, model.predict(b.X_test)))
            cos.setdefault(arm, []).append(float(model.coef_ @ b.w_star / np.linalg.norm(model.coef_)))
            if arm == "clean" and gap is None:
                gap = risk_gap(b.X @ model.coef_ + model.intercept_, b.y_clean, b.rho,
                               n_draws=cfg.draws, random_state=123)
        if with_cleanlab:
            lam = lams["noisy"][-1]  # cross-validated plain CE on the noisy labels, as for the noisy arm
            lams.setdefault("cleanlab", []).append(lam)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                accuracy, cosine = _cleanlab_arm(b, lam, s)
            acc.setdefault("cleanlab", []).append(accuracy)
            cos.setdefault("cleanlab", []).append(cosine)
    mean = {arm: float(np.mean(v)) for arm, v in acc.items()}
    wins = int(np.sum(np.array(acc["forward-oracle"]) > np.array(acc["noisy"])))
    k = len(seeds)
    need = max(1, k - max(1, k // 10))
    rows = [{"method": arm, "accuracy": mean[arm], "accuracy_std": float(np.std(acc[arm])),
             "accuracy_min": float(np.min(acc[arm])), "accuracy_max": float(np.max(acc[arm])),
             "cosine_w_star": float(np.mean(cos[arm])), "lam_per_seed": lams[arm]} for arm in acc]
    metrics = {f"accuracy_{arm}": v for arm, v in mean.items()}
    metrics.update(rho_hat_mae=float(np.mean(maes)), noise_rate=float(np.mean(rates)), n_seeds=k,
                   forward_oracle_wins=wins, risk_clean_loss=gap.clean_loss, risk_corrected_loss=gap.corrected_loss,
                   risk_gap=gap.gap, risk_gap_se=gap.se)
    def paired(name: str, paper: str, arm: str, baseline: str, margin: float) -> Claim:
        return Claim.paired(name, paper, acc[arm], acc[baseline], seeds, margin=margin,
                            what=f"accuracy({arm}) - accuracy({baseline})")

    claims = [
        Claim.mean_at_least("1a clean learner is accurate", "prototype 0.992", acc["clean"], seeds, 0.98,
                            "accuracy(clean)"),
        paired("1b the noise hurts", "prototype 0.992 - 0.895 = 0.097", "clean", "noisy", 0.05),
        # the central claim
        paired("2a forward with oracle rho beats noisy CE", "prototype +0.055 (0.950 vs 0.895)", "forward-oracle",
               "noisy", 0.03),
        Claim.at_least("2b ... in nearly every seed", "prototype 10/10 seeds", wins, need,
                       f"seeds (of {k}) where forward-oracle beats noisy"),
        paired("3 per-instance beats constant-rate correction", "prototype +0.061 (0.950 vs 0.889)",
               "forward-oracle", "constant", 0.03),
        paired("4 backward with oracle rho is not worse than noisy", "prototype +0.013 (0.908 vs 0.895)",
               "backward-oracle", "noisy", -0.005),
        Claim.mean_at_most("5a rho is estimable (cross-fitted posterior)", "prototype MAE 0.133-0.140", maes, seeds,
                           0.16, "MAE(rho_hat, rho)"),
        paired("5b forward with rho_hat beats noisy CE", "prototype +0.018 (0.913 vs 0.895)", "forward-rho_hat",
               "noisy", 0.005),
        paired("5c forward with rho_hat beats constant-rate correction", "prototype +0.024 (0.913 vs 0.889)",
               "forward-rho_hat", "constant", 0.01),
        Claim.at_most("6 risk equivalence: noisy corrected risk = clean risk", "Theorem (risk equivalence)",
                      abs(gap.z), 4.0, f"|mean corrected - clean CE| / SE over {cfg.draws} draws"),
    ]
    if with_cleanlab:  # the criterion: forward-oracle >= cleanlab on at least 80 % of the seeds
        cl_wins = int(np.sum(np.array(acc["forward-oracle"]) >= np.array(acc["cleanlab"])))
        metrics["forward_oracle_wins_over_cleanlab"] = cl_wins
        claims += [
            Claim.at_least("2c forward with oracle rho beats cleanlab CleanLearning in most seeds",
                           "issue 37: >= 8 of 10 seeds", cl_wins, int(np.ceil(0.8 * k)),
                           f"seeds (of {k}) where accuracy(forward-oracle) >= accuracy(cleanlab)"),
            paired("5d forward with rho_hat is within 0.02 of cleanlab CleanLearning", "issue 37: within 0.02",
                   "forward-rho_hat", "cleanlab", -0.02),
        ]
    else:  # not applicable rather than failed: the anchor is an optional extra
        rows.append({"method": CLEANLAB_NOT_APPLICABLE})
    return Result(metrics=metrics, rows=rows, claims=claims)


@dataclass(frozen=True)
class GBMConfig:
    """Scale of the GBM benchmark: datasets (gated and report-only), seeds, boosting rounds, most HGB rounds of
    the rho estimator, MLP epochs (0: none), claim 7's margin."""

    gated: tuple[str, ...]
    report: tuple[str, ...]
    n_seeds: int
    rounds: int = 300
    hgb_iter: int = 500
    mlp_epochs: int = 0
    accuracy_margin: float = -0.02


GBM_SCALES = {"smoke": GBMConfig(("breast_cancer",), (), 2, rounds=30, hgb_iter=50, mlp_epochs=5),
              "quick": GBMConfig(("breast_cancer", "wine"), (), 5),
              "full": GBMConfig(("breast_cancer", "wine", "digits"), ("tones",), 5, mlp_epochs=100,
                                accuracy_margin=0.0),
              "paper": GBMConfig(("breast_cancer", "wine", "digits"), ("tones",), 5, mlp_epochs=100,
                                 accuracy_margin=0.0)}
# Leaf L2 as XGBoost's default; the leaf-step cap and the forward-corrected stopping loss were
# chosen on base seeds 1 and 2 (breast-cancer), never on the benchmark's or held-out seeds.
BOOSTER = {"learning_rate": 0.05, "max_depth": 3, "min_samples_leaf": 20, "reg_lambda": 1.0, "max_delta_step": 1.0,
           "validation_fraction": 0.2, "stopping": "forward"}
LOADERS = {"breast_cancer": data.breast_cancer, "wine": data.wine_binary, "digits": data.digits_odd_even,
           "tones": data.tones}
GBM_ARMS = {"noisy": ("none", "oracle"), "forward-oracle": ("forward", "oracle"),
            "backward-oracle": ("backward", "oracle"), "forward-rho_hat": ("forward", "rho_hat")}


def _gbm_dataset(name: str, seeds: list[int], cfg: GBMConfig, device: str) -> list[dict]:
    """One row per (learner, arm, seed) on one dataset: clean-test accuracy and log-loss."""
    X, y = LOADERS[name]()
    out = []
    for s in seeds:
        y_noisy, rho = instance_only_flip(X, y, kind="region", rho_max=RHO_MAX, random_state=s)
        split = stratified_split_indices(y, {"train": 0.7, "test": 0.3}, seed=s)
        tr, te = split["train"], split["test"]
        rho_hat = np.minimum(rho_posterior(X[tr], y_noisy[tr], estimator=posterior_model(cfg.hgb_iter, s),
                                           random_state=s), RHO_MAX)
        rhos = {"oracle": rho[tr], "rho_hat": rho_hat}
        learners = {"gbm": lambda mode, s=s: CorrectedGradientBoosting(
            mode=mode, n_estimators=cfg.rounds, rho=None, random_state=s, **BOOSTER)}
        if cfg.mlp_epochs and importlib.util.find_spec("torch") is not None:  # MLP arms need the torch extra
            learners["mlp"] = lambda mode, s=s: CorrectedMLP(hidden=(128,), mode=mode, epochs=cfg.mlp_epochs,
                                                             rho=None, random_state=s, device=device)
        for learner, make in learners.items():
            for arm, (mode, source) in GBM_ARMS.items():
                model = make(mode).fit(X[tr], y_noisy[tr], rho=rhos[source])
                p = model.predict_proba(X[te])[:, 1]
                out.append({"dataset": name, "learner": learner, "arm": arm, "seed": s,
                            "accuracy": clean_accuracy(y[te], (p > 0.5).astype(int)),
                            "log_loss": clean_log_loss(y[te], p),
                            "rounds": getattr(model, "n_estimators_", None)})
        out.append({"dataset": name, "learner": "rho", "arm": "rho_hat", "seed": s,
                    "rho_mae": rho_mae(rho_hat, rho[tr]), "noise_rate": float(np.mean(y_noisy[tr] != y[tr]))})
    return out


def run_gbm(scale: str, device: str, seed: int, out_dir: pathlib.Path) -> Result:
    """Criteria 7-8: forward-oracle GBM vs the noisy GBM on clean test labels; seeds ``derive_seeds(seed, n_seeds)``."""
    cfg = GBM_SCALES[scale]
    if scale == "paper":  # the GPU protocol's local data, checked before any work
        from .paper_nn import check_paper_data

        check_paper_data()
    seeds = derive_seeds(seed, cfg.n_seeds)
    records = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for name in cfg.gated + cfg.report:
            records += _gbm_dataset(name, seeds, cfg, device)
    rows, metrics, claims = [], {}, []
    for name in cfg.gated + cfg.report:
        for learner in ("gbm", "mlp"):
            for arm in GBM_ARMS:
                sel = [r for r in records if (r["dataset"], r["learner"], r["arm"]) == (name, learner, arm)]
                if not sel:
                    continue
                row = {"method": f"{learner}/{arm}", "dataset": name,
                       "accuracy": float(np.mean([r["accuracy"] for r in sel])),
                       "log_loss": float(np.mean([r["log_loss"] for r in sel])),
                       "log_loss_per_seed": [r["log_loss"] for r in sel]}
                if learner == "gbm":
                    row["rounds_mean"] = float(np.mean([r["rounds"] for r in sel]))
                rows.append(row)
                metrics[f"{name}_{learner}_{arm}_accuracy"] = row["accuracy"]
                metrics[f"{name}_{learner}_{arm}_log_loss"] = row["log_loss"]
        est = [r for r in records if (r["dataset"], r["learner"]) == (name, "rho")]
        metrics[f"{name}_rho_hat_mae"] = float(np.mean([r["rho_mae"] for r in est]))
        metrics[f"{name}_noise_rate"] = float(np.mean([r["noise_rate"] for r in est]))
    prototype = {"breast_cancer": ("0.895 vs 0.873", "0.040 (0.415 -> 0.375)"),
                 "digits": ("0.861 vs 0.857", "0.064 (0.396 -> 0.332)"),
                 "wine": ("not in the spec (issue 37: tabular beyond breast cancer)", "not in the spec")}
    for name in cfg.gated:
        def per_seed(arm: str, key: str, name=name) -> list[float]:
            by_seed = {r["seed"]: r[key] for r in records
                       if (r["dataset"], r["learner"], r["arm"]) == (name, "gbm", arm)}
            return [by_seed[s] for s in seeds]

        gain = "is at least that of" if cfg.accuracy_margin >= 0 else f"within {-cfg.accuracy_margin:g} of"
        claims.append(Claim.paired(f"7 {name}: forward-oracle GBM accuracy {gain} noisy GBM",
                                   f"prototype {prototype[name][0]}", per_seed("forward-oracle", "accuracy"),
                                   per_seed("noisy", "accuracy"), seeds, margin=cfg.accuracy_margin,
                                   what="accuracy(forward-oracle) - accuracy(noisy)"))
        claims.append(Claim.paired(f"8 {name}: forward-oracle GBM improves clean log-loss",
                                   f"prototype {prototype[name][1]}", per_seed("forward-oracle", "log_loss"),
                                   per_seed("noisy", "log_loss"), seeds, margin=0.02, higher_is_better=False,
                                   what="log_loss(forward-oracle) - log_loss(noisy), nats"))
    result = Result(metrics=metrics, rows=rows, claims=claims)
    if scale == "paper":
        from .paper_nn import run_paper_protocol

        nn_rows, nn_metrics = run_paper_protocol(device, seed)
        result.rows += nn_rows
        result.metrics.update(nn_metrics)
    return result


LINEAR = Benchmark("instance-noise.linear", PAPER, PACKAGE, run_linear)
GBM = Benchmark("instance-noise.gbm", PAPER, PACKAGE, run_gbm)
BENCHMARKS = (LINEAR, GBM)
