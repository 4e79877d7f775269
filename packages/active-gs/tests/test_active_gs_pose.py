"""Robust pose refinement against the ground-truth toy scene (spec test 9, issue 28) and its input checks."""
import copy
import math

import numpy as np
import pytest
import torch
from iclr26_active_gs import SyntheticObjectScene, pose_errors, robust_pose_refine


@pytest.fixture(scope="module")
def scene():
    return SyntheticObjectScene(n_test=0)


@pytest.fixture
def one_thread():
    """One torch thread for this test (an earlier CLI test may have sized the pool to every core)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.mark.slow
def test_refinement_brings_nine_of_ten_perturbations_under_the_bounds(one_thread):
    """Issue 28 item 2 / spec test 9: against the ground-truth model, 3 deg / 0.05 perturbations end under
    0.3 deg and 0.01 on at least 9 of 10 trials (48x48 images to stay fast; 10 candidate views)."""
    small = SyntheticObjectScene(image_size=48, n_candidates=10, n_test=0)
    rng = np.random.default_rng(11)
    errors = []
    for k in range(10):
        cam = small.candidates[k]
        w, r = rng.normal(size=3), rng.normal(size=3)
        xi = np.concatenate([w / np.linalg.norm(w) * math.radians(3.0), r / np.linalg.norm(r) * 0.05])
        noisy = cam.perturbed(torch.tensor(xi, dtype=torch.float32))
        assert pose_errors(noisy, cam)[0] == pytest.approx(3.0, abs=1e-3)
        refined, _ = robust_pose_refine(small.gt, small.render_gt(cam), noisy, extent=small.extent, gn_steps=6)
        errors.append(pose_errors(refined, cam))
    passed = sum(rot < 0.3 and trans < 0.01 for rot, trans in errors)
    assert passed >= 9, errors


def test_adam_schedule_lowers_the_robust_loss(scene):
    """The spec's first-order schedule (``method="adam"``) still runs and lowers its loss."""
    cam = scene.candidates[3]
    rng = np.random.default_rng(5)
    w, r = rng.normal(size=3), rng.normal(size=3)
    xi = np.concatenate([w / np.linalg.norm(w) * math.radians(3.0), r / np.linalg.norm(r) * 0.05])
    noisy = cam.perturbed(torch.tensor(xi, dtype=torch.float32))
    _, info = robust_pose_refine(scene.gt, scene.render_gt(cam), noisy, extent=scene.extent, method="adam",
                                 levels=(1,), steps=20)
    assert info["history"][-1] < 0.6 * info["history"][0]


def test_refinement_refuses_bad_images(scene):
    cam = scene.candidates[0]
    with pytest.raises(ValueError, match="does not match"):
        robust_pose_refine(scene.gt, torch.zeros(32, 32, 3), cam)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        robust_pose_refine(scene.gt, torch.full((64, 64, 3), 2.0), cam)
    with pytest.raises(ValueError, match="loss"):
        robust_pose_refine(scene.gt, torch.zeros(64, 64, 3), cam, loss="huber")
    with pytest.raises(ValueError, match="method"):
        robust_pose_refine(scene.gt, torch.zeros(64, 64, 3), cam, method="sgd")
    with pytest.raises(ValueError, match="mask"):
        robust_pose_refine(scene.gt, torch.zeros(64, 64, 3), cam, mask="alpha")
    with pytest.raises(ValueError, match="accept_loss"):
        robust_pose_refine(scene.gt, torch.zeros(64, 64, 3), cam, accept_loss=0)


def test_default_objective_does_not_reward_shrinking_the_footprint(scene):
    """Issue 28: with an imperfect model (ground truth with jittered colours), the spec's pose-dependent mask
    ``A > 0.5`` scores a camera pulled 0.5 back (a smaller footprint) lower than the true pose; the default
    objective over every pixel scores the true pose lower."""
    from iclr26_active_gs.pose import _robust_terms
    from iclr26_active_gs.render import render

    model = copy.deepcopy(scene.gt)
    with torch.no_grad():
        model.color_logits.add_(torch.randn(model.color_logits.shape, generator=torch.Generator().manual_seed(3)))
    cam = scene.candidates[3]
    back = cam.perturbed(torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 0.5]))
    image = scene.render_gt(cam)

    def objective(camera, mask):
        with torch.no_grad():
            out = render(model, camera, bg=scene.bg)
        return _robust_terms(out["rgb"], image, out["alpha"], "geman-mcclure", 0.1, mask)[0]

    assert objective(back, "model") < objective(cam, "model")
    assert objective(cam, "none") < objective(back, "none")


def test_refinement_is_refused_when_the_model_does_not_explain_the_image(scene):
    """A model that explains nothing of the image (one faint Gaussian) fails the acceptance check: the
    reported camera comes back unchanged."""
    from iclr26_active_gs import GaussianModel

    cam = scene.candidates[3]
    noisy = cam.perturbed(torch.tensor([0.03, 0.0, 0.0, 0.0, 0.05, 0.0]))
    refined, info = robust_pose_refine(GaussianModel(1, seed=0), scene.render_gt(cam), noisy, extent=scene.extent,
                                       gn_steps=1, levels=(4,))
    assert not info["accepted"] and info["fit"] > 0.2
    assert torch.equal(refined.viewmat, noisy.viewmat)
