"""The benchmark's claims are computed from per-seed rows: the robustness comparison is paired over seeds and
judged on APGD-DLR accuracy (PGD-7 is reported, not judged)."""
import dataclasses

import pytest
import torch
from iclr26_stod import accuracy, fgsm
from iclr26_stod.bench import CONFIGS, _claims, _data, _evaluate

SEEDS = [0, 1, 2]


def _rows(stod_acc, direct_acc, at=False, prefix=""):
    """Evaluated rows as ``run`` builds them, with the APGD-DLR accuracies (the judged attack) planted per seed
    and PGD-7 planted the other way round (``prefix``: the convention's method prefix, e.g. ``"sibling:"``)."""
    suffix = "+AT" if at else ""
    rows = []
    for i, s in enumerate(SEEDS):
        common = {"seed": s, "at": at, "clean": 0.95, "fgsm@0.1": 0.5, "apgd_ce@0.1": 0.4, "gtc_first_layer": 0.9}
        rows.append({"method": prefix + "direct" + suffix, "apgd_dlr@0.1": direct_acc[i], "pgd7@0.1": stod_acc[i],
                     "gtc_input": 0.95, **common})
        for name, gtc in (("stod_removed", 0.95), ("stod_kept", 0.93 - 0.001 * i)):
            rows.append({"method": prefix + name + suffix, "apgd_dlr@0.1": stod_acc[i], "pgd7@0.1": direct_acc[i],
                         "gtc_input": gtc, "gor_init": 3.4, "gor_end": 2.5, "orthogonality_error": 1e-7, **common})
    return rows


def _claim(claims, name):
    return next(c for c in claims if c.name == name)


def _quick(stod_pgd, direct_pgd, sibling=((0.5,) * 3, (0.5,) * 3)):
    """``quick``'s claims on planted rows (the sibling convention's PGD-7 accuracies planted separately)."""
    return _claims("quick", CONFIGS["quick"], _rows(stod_pgd, direct_pgd) + _rows(*sibling, prefix="sibling:"),
                   SEEDS, {})


def test_central_claim_is_paired_and_a_worse_method_fails_it():
    better, worse = [0.60, 0.62, 0.61], [0.50, 0.49, 0.52]
    c = _claim(_quick(better, worse), "stod_more_robust")
    assert c.holds and c.per_seed["seeds"] == SEEDS and c.per_seed["wins"] == 3
    assert c.per_seed["values"] == pytest.approx([0.10, 0.13, 0.09])
    swapped = _claim(_quick(worse, better), "stod_more_robust")
    assert not swapped.holds and swapped.measured == pytest.approx(-c.measured)
    # one lucky seed does not carry the claim: the interval includes zero
    mixed = _claim(_quick([0.70, 0.45, 0.50], [0.50, 0.50, 0.50]), "stod_more_robust")
    assert mixed.per_seed["wins"] == 1 and mixed.per_seed["low"] < 0 and not mixed.holds


def test_each_convention_is_judged_on_its_own_models():
    better, worse = [0.60, 0.62, 0.61], [0.50, 0.49, 0.52]
    metrics = {}
    claims = _claims("quick", CONFIGS["quick"], _rows(worse, better) + _rows(better, worse, prefix="sibling:"),
                     SEEDS, metrics)
    assert not _claim(claims, "stod_more_robust").holds
    sibling = _claim(claims, "stod_more_robust_sibling")
    assert sibling.holds and sibling.per_seed["values"] == pytest.approx([0.10, 0.13, 0.09])
    assert metrics["sibling:stod_removed-sibling:direct.apgd_dlr@0.1"] == pytest.approx(0.32 / 3)
    assert metrics["stod_removed-direct.apgd_dlr@0.1"] == pytest.approx(-0.32 / 3)
    assert metrics["stod_removed-direct.pgd7@0.1"] == pytest.approx(0.32 / 3)  # reported, not judged


def _full_claims(stod_at_acc, direct_at_acc):
    """``full``'s claims on planted rows: plain and AT models on every seed, rate encoding (no APGD)."""
    rows = (_rows([0.60] * 3, [0.55] * 3) + _rows(stod_at_acc, direct_at_acc, at=True)
            + _rows([0.5] * 3, [0.5] * 3, prefix="sibling:") + _rows(direct_at_acc, stod_at_acc, True, "sibling:")
            + _rows([0.5] * 3, [0.5] * 3, prefix="sibling_remap:"))
    rows += [{k: v for k, v in r.items() if not k.startswith("apgd")} | {"method": "rate", "clean": 0.93}
             for r in rows if r["method"] == "direct" and r["seed"] == 0]
    return {c.name: c for c in _claims("full", CONFIGS["full"], rows, SEEDS, {})}


def test_adversarial_claims_are_paired_over_the_same_seeds():
    claims = _full_claims([0.80, 0.81, 0.79], [0.70, 0.72, 0.69])
    assert claims["stod_at_beats_direct_at"].holds and claims["stod_at_beats_direct_at"].per_seed["n"] == 3
    assert claims["adversarial_training_works"].per_seed["values"] == pytest.approx([0.15, 0.17, 0.14])
    swapped = _full_claims([0.70, 0.72, 0.69], [0.80, 0.81, 0.79])
    assert not swapped["stod_at_beats_direct_at"].holds and not swapped["stod_at_not_catastrophic"].holds
    # the sibling convention's AT models are judged on their own rows (planted the other way round)
    assert not claims["stod_at_beats_direct_at_sibling"].holds and swapped["stod_at_beats_direct_at_sibling"].holds


def test_stod_must_lower_the_direct_gtc_by_a_tenth_under_the_sibling_convention():
    def gtc_claim(kept_gtc):
        rows = _rows([0.5] * 3, [0.5] * 3) + _rows([0.5] * 3, [0.5] * 3, prefix="sibling:")
        for r in rows:
            if r["method"] == "sibling:stod_kept":
                r["gtc_input"] = kept_gtc[r["seed"]]  # sibling:direct has GTC 0.95
        return _claim(_claims("quick", CONFIGS["quick"], rows, SEEDS, {}), "stod_lowers_gtc_sibling")

    c = gtc_claim([0.80, 0.81, 0.79])
    assert c.holds and c.per_seed["values"] == pytest.approx([0.15, 0.14, 0.16])
    assert not gtc_claim([0.90, 0.91, 0.89]).holds  # lower, but by less than 0.1


def test_remapped_intensity_rows_are_judged_on_their_own_models():
    """``full`` (``Config.remap``) judges the sibling convention on remapped images from the ``sibling_remap:``
    rows only: GTC drop > 0.1 and STOD - direct under APGD-DLR, both paired; ``quick`` has no such claims."""
    def remap_claims(stod_acc, direct_acc, kept_gtc):
        rows = (_rows([0.5] * 3, [0.5] * 3) + _rows([0.5] * 3, [0.5] * 3, at=True)
                + _rows([0.5] * 3, [0.5] * 3, prefix="sibling:") + _rows([0.5] * 3, [0.5] * 3, True, "sibling:")
                + _rows(stod_acc, direct_acc, prefix="sibling_remap:"))
        rows += [{k: v for k, v in r.items() if not k.startswith("apgd")} | {"method": "rate"}
                 for r in rows if r["method"] == "direct" and r["seed"] == 0]
        for r in rows:
            if r["method"] == "sibling_remap:stod_kept":
                r["gtc_input"] = kept_gtc[r["seed"]]  # sibling_remap:direct has GTC 0.95
        metrics = {}
        claims = {c.name: c for c in _claims("full", CONFIGS["full"], rows, SEEDS, metrics)}
        return claims["stod_lowers_gtc_sibling_remap"], claims["stod_more_robust_sibling_remap"], claims, metrics

    better, worse = [0.60, 0.62, 0.61], [0.50, 0.49, 0.52]
    gtc, robust, claims, metrics = remap_claims(better, worse, [0.80, 0.81, 0.79])
    assert gtc.holds and gtc.per_seed["values"] == pytest.approx([0.15, 0.14, 0.16])
    assert robust.holds and robust.per_seed["values"] == pytest.approx([0.10, 0.13, 0.09])
    assert not claims["stod_more_robust_sibling"].holds  # the unremapped rows are level
    assert metrics["sibling_remap:stod_removed-sibling_remap:direct.apgd_dlr@0.1"] == pytest.approx(0.32 / 3)
    assert "sibling_remap:stod_removed+AT-sibling_remap:direct+AT.apgd_dlr@0.1" not in metrics  # no AT rows
    gtc, robust, _, _ = remap_claims(worse, better, [0.90, 0.91, 0.89])
    assert not gtc.holds and not robust.holds
    assert CONFIGS["full"].remap == (0.25, 0.5) and CONFIGS["quick"].remap is None
    assert not any(c.name.endswith("_remap") for c in _quick([0.5] * 3, [0.5] * 3))


def test_only_the_remap_rows_see_remapped_images():
    cfg = dataclasses.replace(CONFIGS["quick"], remap=(0.25, 0.5))
    _, x_plain, y_plain = _data(cfg, 0, "sibling")
    data, x_mid, y_mid = _data(cfg, 0, "sibling_remap")
    assert torch.equal(x_mid, 0.25 + 0.5 * x_plain) and torch.equal(y_mid, y_plain)
    assert float(data.x_train.min()) == 0.25 and torch.equal(_data(cfg, 0, "spec")[1], x_plain)


def test_remapped_images_are_attacked_with_the_radius_scaled_to_their_contrast(trained_direct):
    """On images remapped to 0.25 + 0.5·x the radius is 0.5·ε (the same perturbation of the original image),
    reported under ε."""
    model, x, y = trained_direct
    cfg = dataclasses.replace(CONFIGS["smoke"], apgd_steps=2, gtc_images=16)
    scaled = _evaluate(model, "direct", x, y, cfg, "cpu", eps_scale=0.5)
    assert scaled["fgsm@0.1"] == accuracy(model, fgsm(model, x, y, 0.05), y)
    assert _evaluate(model, "direct", x, y, cfg, "cpu")["fgsm@0.1"] == accuracy(model, fgsm(model, x, y, 0.1), y)
