"""``iclr26-energycp``: demo, fit, predict, evaluate, bench/reproduce (a thin layer over the API).

Every command writes fixed file names inside the ``--out`` folder: ``demo.json``, ``model.json``,
``sets.npy`` or ``sets.json``, ``evaluation.json`` and the benchmark result JSON.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import pathlib
from collections.abc import Sequence

import numpy as np
from iclr26_shared.bench import atomic_path, write_json_atomic
from iclr26_shared.cli import (
    Parser,
    add_bench_command,
    common_options,
    existing_file,
    fraction_arg,
    output_paths,
    positive_int,
    progress,
    run,
    usage_error,
)

from .bench import BENCHMARK
from .datasets import load_labels, load_logits, make_digits_logits, tune_pool_split
from .predictor import EnergyConformalClassifier
from .scores import BASE_SCORES
from .tuning import tune_energy

KWARGS = {"raps": {"penalty": 0.2, "kreg": 2}, "saps": {"saps_weight": 0.2}}
LOGITS = "a .npy/.npz/.pt/.csv file of (n, K) logits (and labels)"


def _device(spec: str):
    """None for the numpy path, or a torch device when ``spec`` asks for (or ``auto`` finds) CUDA."""
    if spec == "cpu" or (spec == "auto" and importlib.util.find_spec("torch") is None):
        return None
    from iclr26_shared.device import resolve_device

    dev = resolve_device(spec)
    return None if dev.type == "cpu" else dev


def _to(device, a: np.ndarray):
    if device is None:
        return a
    import torch

    return torch.as_tensor(a, device=device)


def _read(args: argparse.Namespace, what: str, need_labels: bool = True):
    """``(logits (n, K), labels (n,) or None)`` from ``--<what>-logits`` (and ``--<what>-labels``).

    Raises:
        ValueError: naming the option, when a file is malformed or labels are needed and missing.
    """
    logits_path, labels_path = getattr(args, f"{what}_logits"), getattr(args, f"{what}_labels", None)
    try:
        labels = None if labels_path is None else load_labels(labels_path)
    except Exception as err:
        raise usage_error(f"--{what}-labels", "a .npy/.npz/.pt/.csv/.txt file of (n,) integer labels",
                          f"{labels_path.name} ({' '.join(str(err).split())})") from err
    try:
        z, y = load_logits(logits_path, None if labels is None else labels_path)
    except Exception as err:
        raise usage_error(f"--{what}-logits", LOGITS, f"{logits_path.name} ({' '.join(str(err).split())})") from err
    if need_labels and y is None:
        raise usage_error(f"--{what}-labels", f"a labels file ({logits_path.name} holds no labels)", "none")
    return z, y


def _table(rows: list[dict], cols: list[str]) -> str:
    head = f"{'method':<14}" + "".join(f"{c:>18}" for c in cols)
    lines = [head, "-" * len(head)]
    for r in rows:
        lines.append(f"{r['method']:<14}" + "".join(f"{r[c]:>18}" for c in cols))
    return "\n".join(lines)


def cmd_demo(args: argparse.Namespace) -> int:
    (out,) = output_paths(args, "demo.json")
    data = make_digits_logits(0)
    tz, ty, pz, py = tune_pool_split(data["pool_logits"], data["pool_labels"], 300, 99)
    idx = np.random.default_rng(args.seed).permutation(pz.shape[0])
    cal, test = idx[:500], idx[500:]
    dev = _device(args.device)
    rows = []
    for score in progress(BASE_SCORES, desc="scores", quiet=args.quiet):
        tuned = tune_energy(tz, ty, score, alpha=args.alpha, n_repeats=20, random_state=args.seed,
                            **KWARGS.get(score, {}))
        for energy in (False, True):
            model = EnergyConformalClassifier(score, energy=energy, alpha=args.alpha, T_energy=tuned.T_energy,
                                              beta=tuned.beta, random_state=args.seed, **KWARGS.get(score, {}))
            model.fit(_to(dev, pz[cal]), _to(dev, py[cal]))
            m = model.evaluate(_to(dev, pz[test]), py[test])
            ood = model.predict_set(_to(dev, data["ood_logits"]))
            m["ood_size"] = float(np.asarray(ood.cpu() if hasattr(ood, "cpu") else ood).sum(1).mean())
            rows.append({"method": ("energy-" if energy else "") + score, **m})
    fmt = [{"method": r["method"], **{k: f"{r[k]:.3f}" for k in ("coverage", "size", "sscv", "covgap", "ood_size")},
            "empty%": f"{100 * r['empty_rate']:.1f}"} for r in rows]
    print(f"embedded corrupted digits, alpha = {args.alpha}, 500 calibration / {test.size} test, 500 OOD inputs")
    print(_table(fmt, ["coverage", "size", "sscv", "covgap", "empty%", "ood_size"]))
    write_json_atomic(out, {"alpha": args.alpha, "seed": args.seed, "methods": rows})
    print(f"-> {out}")
    return 0


def _positive_or_auto(text: str) -> float | str:
    if text == "auto":
        return text
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not (value > 0 and np.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a number > 0 or 'auto', got {text!r}")
    return value


def cmd_fit(args: argparse.Namespace) -> int:
    (out,) = output_paths(args, "model.json")
    if args.input == "probs" and not args.no_energy:
        raise usage_error("--input", "logits for the energy weight (add --no-energy to use probabilities)", "probs")
    z, y = _read(args, "cal")
    T_energy, beta = args.T_energy, args.beta
    if args.tune_logits:
        tz, ty = _read(args, "tune")
        tuned = tune_energy(tz, ty, args.score, alpha=args.alpha, T_cal=args.T_cal, random_state=args.seed,
                            **KWARGS.get(args.score, {}))
        T_energy, beta = tuned.T_energy, tuned.beta
        print(f"tuned on {tz.shape[0]} tuning rows: T_energy = {T_energy:g}, beta = {beta:g}")
    dev = _device(args.device)
    model = EnergyConformalClassifier(args.score, energy=not args.no_energy, alpha=args.alpha, T_energy=T_energy,
                                      beta=beta, T_cal=args.T_cal, randomized=not args.no_randomized,
                                      class_conditional=args.class_conditional, input=args.input,
                                      random_state=args.seed, **KWARGS.get(args.score, {}))
    model.fit(_to(dev, z), _to(dev, y))
    write_json_atomic(out, model.to_dict())
    q = model.q_hat_
    untuned = "no gain shown on the tuning rows" if model.n_calibration_ < len(z) else "too few rows to tune"
    weight = ("" if args.no_energy else f" (energy, T_energy = {model.T_energy_:g}, beta = {model.beta_:g})"
              if model.weight_ == "energy" else f" (energy 'auto': {untuned}, so the base score)")
    print(f"calibrated {args.score}{weight} on {model.n_calibration_} rows, "
          f"q_hat = {q if np.isscalar(q) else 'per class'} -> {out}")
    return 0


def _load_model(path: pathlib.Path) -> EnergyConformalClassifier:
    try:
        return EnergyConformalClassifier.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except Exception as err:
        raise usage_error("--model", "a model.json written by `iclr26-energycp fit`",
                          f"{path.name} ({' '.join(str(err).split())})") from err


def cmd_predict(args: argparse.Namespace) -> int:
    (out,) = output_paths(args, f"sets.{args.format}")
    model = _load_model(args.model)
    z, _ = _read(args, "test", need_labels=False)
    dev = _device(args.device)
    sets = model.predict_set(_to(dev, z))
    sets = sets.cpu().numpy() if hasattr(sets, "cpu") else np.asarray(sets)
    print(f"{sets.shape[0]} prediction sets, mean size {sets.sum(1).mean():.4f}")
    if args.format == "json":
        write_json_atomic(out, [np.flatnonzero(r).tolist() for r in sets])
    else:
        with atomic_path(out) as tmp:
            np.save(tmp, sets)
    print(f"-> {out}")
    return 0


def _score_list(text: str) -> list[str]:
    scores = [s.strip() for s in text.split(",") if s.strip()]
    bad = [s for s in scores if s not in BASE_SCORES]
    if bad or not scores:
        raise argparse.ArgumentTypeError(f"expected a comma list of {', '.join(BASE_SCORES)}, got {text!r}")
    return scores


def cmd_evaluate(args: argparse.Namespace) -> int:
    (out,) = output_paths(args, "evaluation.json")
    zc, yc = _read(args, "cal")
    zt, yt = _read(args, "test")
    if zc.shape[1] != zt.shape[1]:
        raise usage_error("--test-logits", f"K = {zc.shape[1]} columns like --cal-logits", f"{zt.shape[1]}")
    n_tune = max(4, int(round(args.tune_frac * zc.shape[0])))
    tz, ty, rest_z, rest_y = tune_pool_split(zc, yc, n_tune, args.seed)
    pool_z, pool_y = np.concatenate([rest_z, zt]), np.concatenate([rest_y, yt])
    n_cal = rest_z.shape[0]
    dev = _device(args.device)
    results: dict[str, dict[str, list[float]]] = {}
    runs = [(score, t) for score in args.scores for t in range(args.trials)]
    tuned = {}
    for score, t in progress(runs, desc="trials", quiet=args.quiet):
        if score not in tuned:
            tuned[score] = tune_energy(tz, ty, score, alpha=args.alpha, random_state=args.seed,
                                       **KWARGS.get(score, {}))
        idx = np.random.default_rng(args.seed + 100 + t).permutation(pool_z.shape[0])
        cal, test = idx[:n_cal], idx[n_cal:]
        for energy in (False, True):
            model = EnergyConformalClassifier(score, energy=energy, alpha=args.alpha,
                                              T_energy=tuned[score].T_energy, beta=tuned[score].beta,
                                              random_state=args.seed + 100 + t, **KWARGS.get(score, {}))
            model.fit(_to(dev, pool_z[cal]), _to(dev, pool_y[cal]))
            m = model.evaluate(_to(dev, pool_z[test]), pool_y[test])
            rec = results.setdefault(("energy-" if energy else "") + score, {})
            for k, v in m.items():
                rec.setdefault(k, []).append(v)
    cols = ["coverage", "size", "sscv", "covgap"]
    rows = [{"method": name, **{c: f"{np.mean(rec[c]):.3f} ± {np.std(rec[c]):.3f}" for c in cols}}
            for name, rec in results.items()]
    print(f"{args.trials} trials, {n_cal} calibration / {pool_z.shape[0] - n_cal} test, {n_tune} tuning rows, "
          f"alpha = {args.alpha}")
    print(_table(rows, cols))
    write_json_atomic(out, {name: {k: {"mean": float(np.mean(v)), "sd": float(np.std(v))} for k, v in rec.items()}
                            for name, rec in results.items()})
    print(f"-> {out}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="iclr26-energycp", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    common = common_options()

    demo = sub.add_parser("demo", parents=[common], help="the eight methods on the embedded digits logits; "
                                                         "writes demo.json")
    demo.add_argument("--alpha", type=float, default=0.1)
    demo.set_defaults(handler=cmd_demo)

    fit = sub.add_parser("fit", aliases=["calibrate"], parents=[common],
                         help="fit q_hat on calibration logits; writes model.json")
    fit.add_argument("--cal-logits", type=existing_file, required=True, help=".npy/.npz/.pt/.csv logits (n, K)")
    fit.add_argument("--cal-labels", type=existing_file, default=None,
                     help="labels file (not needed when the logits file holds them)")
    fit.add_argument("--score", choices=BASE_SCORES, default="aps")
    fit.add_argument("--no-energy", action="store_true", help="the base score, without the energy weight")
    fit.add_argument("--alpha", type=float, default=0.1)
    fit.add_argument("--T-energy", dest="T_energy", type=_positive_or_auto, default="auto",
                     help="energy temperature, or 'auto' (default): tuned on 30%% of the calibration rows")
    fit.add_argument("--beta", type=_positive_or_auto, default="auto", help="softplus sharpness, or 'auto'")
    fit.add_argument("--input", choices=("logits", "probs"), default="logits",
                     help="what the files hold; probs allows the base scores only (with --no-energy)")
    fit.add_argument("--T-cal", dest="T_cal", type=float, default=1.0)
    fit.add_argument("--no-randomized", action="store_true", help="u = 0 (larger sets)")
    fit.add_argument("--class-conditional", action="store_true", help="one threshold per class")
    fit.add_argument("--tune-logits", type=existing_file, default=None,
                     help="tune T_energy and beta on these (disjoint) logits")
    fit.add_argument("--tune-labels", type=existing_file, default=None)
    fit.set_defaults(handler=cmd_fit)

    pred = sub.add_parser("predict", parents=[common],
                          help="prediction sets from a model.json; writes sets.npy (or sets.json)")
    pred.add_argument("--model", type=existing_file, required=True, help="model.json written by fit")
    pred.add_argument("--logits", dest="test_logits", type=existing_file, required=True)
    pred.add_argument("--format", choices=("npy", "json"), default="npy",
                      help="sets.npy: a boolean (n, K) array; sets.json: a list of label lists (default: npy)")
    pred.set_defaults(handler=cmd_predict)

    ev = sub.add_parser("evaluate", aliases=["eval"], parents=[common],
                        help="base vs energy over random cal/test splits; writes evaluation.json")
    ev.add_argument("--cal-logits", type=existing_file, required=True)
    ev.add_argument("--cal-labels", type=existing_file, default=None)
    ev.add_argument("--test-logits", type=existing_file, required=True)
    ev.add_argument("--test-labels", type=existing_file, default=None)
    ev.add_argument("--scores", type=_score_list, default="lac,aps,raps,saps")
    ev.add_argument("--alpha", type=float, default=0.1)
    ev.add_argument("--tune-frac", type=fraction_arg, default=0.2,
                    help="fraction of the calibration file kept for tuning")
    ev.add_argument("--trials", type=positive_int, default=10)
    ev.set_defaults(handler=cmd_evaluate)

    add_bench_command(sub, [BENCHMARK])
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    return run(build_parser(), argv)
