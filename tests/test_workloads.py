"""Workloads: the five networks' task set and the task kinds their import gives."""

from collections import Counter

from tvm_tensorgpt.workloads.tasks import load_tasks


def test_task_set_covers_the_five_networks_and_kinds():
    tasks = load_tasks()
    networks = {n for t in tasks for n in t.networks}
    assert networks == {"resnet18", "resnet50", "mobilenetv2", "densenet121", "r3d18", "bert"}
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
