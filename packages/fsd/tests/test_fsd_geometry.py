import numpy as np
import pytest
from iclr26_fsd import Arm, Camera, TableTop2D, UnreachableError, VisualAidController
from iclr26_fsd.render import object_coverage
from iclr26_fsd.scene import (
    HELD_OUT_PAIRS,
    Instruction,
    Scene,
    TableObject,
    is_held_out,
    is_success,
    relation_holds,
)


@pytest.fixture(scope="module")
def train_env():
    return TableTop2D("train", 500, seed=3)


@pytest.mark.parametrize("arm", [Arm.default(), Arm.alternative()])
def test_fk_inverts_ik(arm):
    rng = np.random.default_rng(0)
    p = rng.uniform(0.1, 0.9, (200, 2))
    np.testing.assert_allclose(arm.fk(arm.ik(p)), p, atol=1e-9)
    with pytest.raises(UnreachableError):
        arm.ik(np.array([arm.base[0], arm.base[1] + arm.l1 + arm.l2 + 0.01]))
    with pytest.raises(UnreachableError):
        arm.ik(np.array(arm.base))  # inside the inner radius


def test_homography_inverse_and_orientation():
    cam = Camera()
    xy = np.random.default_rng(1).uniform(0, 1, (100, 2))
    np.testing.assert_allclose(cam.pixel_to_table(cam.table_to_pixel(xy)), xy, atol=1e-9)
    near, far = cam.table_to_pixel(np.array([[0.5, 0.1], [0.5, 0.9]]))
    assert far[1] < near[1]  # y away from the robot is up in the image (v points down)
    left, right = cam.table_to_pixel(np.array([[0.1, 0.5], [0.9, 0.5]]))
    assert left[0] < right[0]


def test_rendered_centroid_matches_projection(train_env):
    cam = train_env.camera
    errors = []
    for scene in train_env.scenes[:20]:
        for obj in scene.objects:
            if obj.shape == "triangle":
                continue  # its centroid moves under perspective more than a symmetric shape's
            cov = object_coverage(obj, cam)
            i, j = np.nonzero(cov)
            w = cov[i, j]
            centroid = np.array([(w * (j + 0.5)).sum(), (w * (i + 0.5)).sum()]) / w.sum()
            errors.append(np.hypot(*(centroid - cam.table_to_pixel(obj.xy))))
    assert max(errors) < 0.6


@pytest.mark.parametrize("arm", ["default", "alt"])
def test_oracle_succeeds_on_every_scene(train_env, arm):
    ctrl = VisualAidController(Arm.named(arm), train_env.camera)
    results = [ctrl.execute(s, a) for s, a in zip(train_env.scenes, train_env.aids, strict=True)]
    assert all(r.success for r in results), [r.reason for r in results if not r.success][:5]


def test_wrong_homography_direction_fails_the_oracle(train_env):
    class Flipped(Camera):
        def norm_to_table(self, n):
            return self.table_to_pixel(np.asarray(n, dtype=float) * self.size / 1000.0) / self.size

    ctrl = VisualAidController(Arm.default(), Flipped())
    rate = np.mean([ctrl.execute(s, a).success for s, a in zip(train_env.scenes, train_env.aids, strict=True)])
    assert rate < 0.2


def _scene(objs, instr):
    return Scene(tuple(objs), None, instr, ((0.5, 0.5),) * 3, 0)


def test_success_predicate_margin_and_overlap():
    a, b = TableObject("red", "square", 0.7, 0.5, 0.12), TableObject("blue", "circle", 0.5, 0.5, 0.12)
    instr = Instruction("rel", "red square", "left of", "blue circle")
    s = _scene([a, b], instr)
    assert is_success(s, instr, np.array([0.3, 0.5]))[0]
    assert is_success(s, instr, np.array([0.36, 0.5])) == (True, "ok")  # 0.14 left, margin and no overlap
    assert is_success(s, instr, np.array([0.2, 0.5]))[1] == "outside_target"  # the box starts 0.28 left of b
    assert is_success(s, instr, np.array([0.4, 0.5]))[1] == "outside_target"  # and ends 0.12 left of b
    assert relation_holds("left of", np.array([0.45, 0.9]), b.xy)
    assert not relation_holds("left of", np.array([0.46, 0.5]), b.xy)  # margin 0.04 < 0.05
    assert relation_holds("on", np.array([0.53, 0.54]), b.xy) and not relation_holds("on", np.array([0.55, 0.53]), b.xy)
    c = TableObject("green", "triangle", 0.3, 0.5, 0.12)
    s3 = _scene([a, b, c], instr)
    assert is_success(s3, instr, np.array([0.32, 0.5]))[1] == "overlap"
    absent = Instruction("rel", "purple circle", "left of", "blue circle")
    assert is_success(s, absent, np.array([0.3, 0.5])) == (False, "absent_object")


def test_unreachable_waypoint_fails_the_episode(train_env):
    tiny = Arm(base=(0.5, -0.35), l1=0.3, l2=0.2)
    r = VisualAidController(tiny, train_env.camera).execute(train_env.scenes[0], train_env.aids[0])
    assert (r.success, r.reason) == (False, "unreachable")
    assert VisualAidController(Arm.default(), train_env.camera).execute(train_env.scenes[0], None).reason == \
        "parse_failure"


def test_split_hygiene_and_uniqueness(train_env):
    held = {f"{c} {s}" for c, s in HELD_OUT_PAIRS}
    for scene in train_env.scenes:
        names = [o.name for o in scene.objects]
        assert len(set(names)) == len(names)
        assert not held & set(names)
        assert not any(h in scene.instruction.text for h in held)
        assert not is_held_out(scene.instruction, scene)
    comp = TableTop2D("test_compositional", 100, seed=3)
    assert all(is_held_out(s.instruction, s) for s in comp.scenes)
    iid = TableTop2D("test_iid", 100, seed=3)
    assert not any(is_held_out(s.instruction, s) for s in iid.scenes)


def test_targets_are_inside_the_workspace(train_env):
    for a in train_env.aids:
        table = train_env.camera.norm_to_table(np.array(a.trace, dtype=float))
        assert table.min() >= 0.0999 and table.max() <= 0.9001 and len(a.trace) == 8


def test_same_seed_same_bytes():
    a, b = TableTop2D("train", 30, seed=7), TableTop2D("train", 30, seed=7)
    assert a.images.tobytes() == b.images.tobytes() and a.instructions == b.instructions
    assert TableTop2D("train", 30, seed=8).images.tobytes() != a.images.tobytes()


def test_a_constant_average_trace_fails_the_floors(train_env):
    from iclr26_fsd import MeanAids, evaluate

    r = evaluate(MeanAids(train_env), TableTop2D("test_iid", 100, seed=4), "default")
    assert r["success_rate"] < 0.05 and r["point_accuracy"] < 0.6 and r["start_error"] > 40


@pytest.mark.parametrize("arm", ["default", "alt"])
def test_grasp_module_executes_box_and_points_not_the_trace(train_env, arm):
    import dataclasses

    arm = Arm.named(arm)
    strict = VisualAidController(arm, train_env.camera)
    grasp = VisualAidController(arm, train_env.camera, grasp_module=True)
    for scene, aids in list(zip(train_env.scenes, train_env.aids))[:60]:
        wrong_trace = dataclasses.replace(aids, trace=tuple(reversed(aids.trace)))  # starts at the goal
        assert not strict.execute(scene, wrong_trace).success
        assert grasp.execute(scene, wrong_trace).success  # grasps at the SrCoT box, places at the points
        far = tuple((min(1000, x + 300), y) for x, y in aids.points)
        assert not grasp.execute(scene, dataclasses.replace(aids, points=far)).success
