"""Workloads: the networks' task set (the training-only kernels included) and the task kinds their import gives."""

from collections import Counter

from tvm_tensorgpt.workloads.tasks import load_tasks


def test_task_set_covers_the_five_networks_and_kinds():
    tasks = load_tasks()
    networks = {n for t in tasks for n in t.networks}
    assert networks == {"resnet18", "resnet50", "mobilenetv2", "densenet121", "r3d18", "bert", "thinkinds"}
    kinds = Counter(t.kind for t in tasks)
    for kind in ("conv2d", "depthwise_conv2d", "conv3d", "dense", "batch_matmul", "reduction", "elementwise"):
        assert kinds[kind] > 0, kind
    assert len({t.name for t in tasks}) == len(tasks)


def test_network_import_gives_expected_task_kinds():
    from tvm_tensorgpt.workloads.tasks import extract_tasks

    tasks = extract_tasks(["bert"])
    kinds = Counter(t.kind for t in tasks)
    assert kinds["dense"] >= 3 and kinds["batch_matmul"] == 2 and kinds["reduction"] >= 2
    committed = {t.name for t in load_tasks()}
    assert {t.name for t in tasks} <= committed


def test_training_only_kernels_fill_the_thin_kinds_and_extract_onto_the_committed_set():
    """The `thinkinds` module (training data only) brings batched matmuls, dense layers, depthwise
    convolutions and reductions in shapes no held-out task has; extracting just it onto the other
    networks' committed tasks gives the committed task file again, names and kernels alike."""
    import tvm_ffi

    from tvm_tensorgpt.data.split import heldout_tasks, training_tasks
    from tvm_tensorgpt.workloads.models import MODELS
    from tvm_tensorgpt.workloads.tasks import extract_tasks

    committed = load_tasks()
    kept = [t for t in committed if t.networks[0] != "thinkinds"]
    tasks = extract_tasks(["thinkinds"], keep=kept)
    assert [t.name for t in tasks] == [t.name for t in committed]
    assert all(tvm_ffi.structural_equal(a.mod, b.mod) for a, b in zip(tasks, committed))
    new = [t for t in committed if t.networks == ["thinkinds"]]
    kinds = Counter(t.kind for t in new)
    assert kinds["batch_matmul"] >= 4 and kinds["dense"] >= 6 and kinds["reduction"] >= 4 and kinds["depthwise_conv2d"] >= 2
    assert not any(tvm_ffi.structural_equal(t.mod, h.mod) for t in new for h in heldout_tasks())
    assert {t.name for t in new} <= {t.name for t in training_tasks()}
    assert "thinkinds" not in MODELS  # training data, not a model to tune
