"""Training: examples from measured records, base/expert/router stages, resume, GPU validity labels."""

import shutil

import pytest
import torch
from conftest import TINY, tiny_net

from tvm_tensorgpt.hardware import get_profile
from tvm_tensorgpt.model import ModelConfig, TensorGPTNetwork
from tvm_tensorgpt.workloads import get_workload


def test_examples_from_measured_records(tmp_path, llvm_target):
    """Records of a real tune become (prompt, response) examples that decode to their traces."""
    from tvm.s_tir import meta_schedule as ms

    from tvm_tensorgpt.hardware import get_profile, universe_standardizer
    from tvm_tensorgpt.language import (
        VOCAB,
        decode_response,
        design_sketches,
        prompt_tokens,
    )
    from tvm_tensorgpt.train.dataset import examples_from_database
    from tvm_tensorgpt.workloads import get_workload

    profile = get_profile("intel-xeon-avx2-1c")
    mod = get_workload("matmul-128").build()
    database = ms.tune_tir(mod, profile.target, str(tmp_path), max_trials_global=8, num_trials_per_iter=8,
                           strategy="replay-trace", builder="tensorgpt", num_tuning_cores=1)  # fmt: skip
    examples, stats = examples_from_database(database, profile, universe_standardizer())
    assert stats.records == 8 and stats.unmatched == 0
    assert stats.examples + stats.duplicates + stats.failed == 8 and stats.examples >= 4
    assert max(e.weight for e in examples) == 1.0 and all(0 < e.weight <= 1 for e in examples)
    sketches = design_sketches(database.get_all_tuning_records()[0].workload.mod, profile.target)
    for example in examples:
        tokens = VOCAB.decode(example.prompt)
        assert tokens[2] == "HW_CPU_X86" and len(example.hardware) == 24
        sketch = next(s for s in sketches if VOCAB.encode(prompt_tokens(s, ["HW_CPU_X86"])) == example.prompt)
        decode_response(sketch, VOCAB.decode(example.response))  # the response fits its sketch
    held = examples_from_database(database, profile, None, exclude=[database.get_all_tuning_records()[0].workload.mod])
    assert held[0] == []
    # min_weight leaves out exactly the records weighing less, and counts them
    cut = sorted(e.weight for e in examples)[len(examples) // 2]
    kept, light = examples_from_database(database, profile, universe_standardizer(), min_weight=cut)
    assert sorted(e.weight for e in kept) == [w for w in sorted(e.weight for e in examples) if w >= cut]
    assert light.light == stats.examples - len(kept) > 0 and light.examples == len(kept)


def test_train_cli_runs_and_resumes(tmp_path, llvm_target, capsys):
    """`tensorgpt train` on a tiny database: an epoch, a checkpoint, a resume, a clear refusal."""
    import json
    from pathlib import Path

    from tvm.s_tir import meta_schedule as ms

    from tvm_tensorgpt.cli import main
    from tvm_tensorgpt.data.stats import data_fingerprint
    from tvm_tensorgpt.hardware import get_profile
    from tvm_tensorgpt.model.checkpoint import load_checkpoint
    from tvm_tensorgpt.workloads import get_workload

    data = tmp_path / "records"
    ms.tune_tir(get_workload("matmul-128").build(), get_profile("intel-xeon-sse42-1c").target, str(data / "intel-xeon-sse42-1c"),
                max_trials_global=8, num_trials_per_iter=8, strategy="replay-trace", builder="tensorgpt",
                num_tuning_cores=1)  # fmt: skip
    out = tmp_path / "ckpt"
    argv = ["train", "--out", str(out), "--data-dir", str(data), "--epochs", "1", "--batch", "4", "--hidden", "32",
            "--layers", "1"]  # fmt: skip
    assert main(argv) == 0
    state = json.loads((out / "training.json").read_text())
    assert state["epochs_done"] == 1 and state["history"][0]["valid_loss"] > 0
    assert state["history"][0]["valid_tasks"] == 1 and state["history"][0]["valid_examples"] > 0
    assert state["data"] == data_fingerprint(data, ["intel-xeon-sse42-1c"])  # which records trained it
    assert main(argv[:5] + ["--epochs", "2"] + argv[7:]) == 0  # resumes: one more epoch
    assert json.loads((out / "training.json").read_text())["epochs_done"] == 2
    records = data / "intel-xeon-sse42-1c" / "database_tuning_record.json"
    saved = records.read_text()
    records.write_text(saved + saved.splitlines(keepends=True)[0])  # the data grew: resuming would mix two
    assert main(argv[:5] + ["--epochs", "3"] + argv[7:]) == 2
    assert "trained on other records" in capsys.readouterr().err
    assert json.loads((out / "training.json").read_text())["epochs_done"] == 2
    records.write_text(saved)
    net, _ = load_checkpoint(out)
    assert net.config.hidden == 32
    assert main(["train", "--out", str(tmp_path / "x"), "--data-dir", str(data), "--profiles", "amd-zen3-avx2-2c"]) == 2
    # bundling ships a checkpoint only if it fits the held-out reference better than the uniform prior
    # and ranks it by speed; --force ships it anyway; either way the numbers go to provenance.json
    from tvm_tensorgpt.train.fit import heldout_fit, shipping_verdict

    reference = tmp_path / "reference"  # the small first-round reference: seconds, not minutes
    shutil.copytree(Path(__file__).resolve().parents[1] / "data" / "reference" / "intel-xeon-avx2-2c",
                    reference / "intel-xeon-avx2-2c")  # fmt: skip
    reference = str(reference)
    fit = heldout_fit(*load_checkpoint(out), reference)
    passed, line = shipping_verdict(fit["summary"])
    one = fit["tasks"][-1]["task"]  # fitting only the tasks asked for
    assert len(fit["tasks"]) > 1 and [row["task"] for row in heldout_fit(*load_checkpoint(out), reference,
                                                                         tasks=[one])["tasks"]] == [one]  # fmt: skip
    with pytest.raises(ValueError, match="no measured record of the tasks asked for"):  # none of a training task here
        heldout_fit(*load_checkpoint(out), reference, tasks=["resnet18/reshape"])
    judged = main(["bundle", str(out), "--out", str(tmp_path / "judged"), "--reference", reference])
    assert judged == (0 if passed else 2) and (tmp_path / "judged").exists() == passed, line
    assert main(["bundle", str(out), "--out", str(tmp_path / "none"), "--reference", str(tmp_path)]) == 2
    assert main(["bundle", str(out), "--out", str(tmp_path / "bundled"), "--note", "test", "--reference", reference,
                 "--force"]) == 0  # fmt: skip
    provenance = json.loads((tmp_path / "bundled" / "provenance.json").read_text())
    assert provenance["note"] == "test" and provenance["training"][str(out)]["epochs_done"] == 2
    assert provenance["heldout_fit"]["passed"] == passed and provenance["heldout_fit"]["prior_nats_per_token"] > 0
    assert provenance["bytes"] < 0.6 * (out / "model.safetensors").stat().st_size
    assert load_checkpoint(tmp_path / "bundled")[0].config == net.config
    assert main(["bundle", str(tmp_path / "x"), "--out", str(tmp_path / "y")]) == 2  # not a checkpoint


def test_expert_and_router_stages(tmp_path):
    """Experts stage: only that expert's LoRA moves; router stage: only the router moves."""
    import random

    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model import Example
    from tvm_tensorgpt.model.checkpoint import load_checkpoint, save_checkpoint
    from tvm_tensorgpt.train.trainer import TrainConfig, train_experts

    base = save_checkpoint(tmp_path / "base", tiny_net(), universe_standardizer())
    rng = random.Random(0)

    def examples(tag: int) -> list[Example]:
        return [Example([1, 3, 7 + tag], [rng.randrange(7, 40) for _ in range(4)] + [2],
                        tuple([float(tag)] * 24), 1.0, tuple([0.5] * 12)) for _ in range(12)]  # fmt: skip

    by_profile = {"intel-xeon-avx2-1c": examples(0), "intel-xeon-sse42-1c": examples(1)}
    config = TrainConfig(epochs=1, batch=4, threads=1)
    state = train_experts(by_profile, base, tmp_path / "experts", config)
    assert state["done"] == ["intel-xeon-avx2-1c", "intel-xeon-sse42-1c", "router"]
    net, _ = load_checkpoint(tmp_path / "experts")
    trained_base, _ = load_checkpoint(base)
    base_weights = trained_base.lm.state_dict()
    for name, value in net.lm.get_base_model().state_dict().items():
        if "lora_" not in name and "base_layer" not in name and name in base_weights:
            assert torch.equal(value, base_weights[name]), name  # the base stayed frozen
    moved = [n for n, p in net.named_parameters() if "lora_B" in n and p.abs().sum() > 0]
    assert any(".intel-xeon-avx2-1c." in n for n in moved) and any(".intel-xeon-sse42-1c." in n for n in moved)
    again = train_experts(by_profile, base, tmp_path / "experts", config)  # finished stages are kept
    assert again["history"] == state["history"]
    # the routing ablations reuse these experts: w/o WA trains a hardware-only router, w/o routing none
    no_wa = train_experts(by_profile, tmp_path / "experts", tmp_path / "no-wa", config, workload_aware=False)
    assert [row["stage"] for row in no_wa["history"]] == ["router"]
    uniform = train_experts(by_profile, tmp_path / "experts", tmp_path / "no-routing", config, routing="uniform")
    assert uniform["history"] == []
    for folder, router_inputs in (("no-wa", 24), ("no-routing", None)):
        ablated, _ = load_checkpoint(tmp_path / folder)
        assert (ablated.router.mlp[0].in_features if ablated.router else None) == router_inputs
        lora = {n: p for n, p in ablated.named_parameters() if "lora_" in n}
        assert lora and all(torch.equal(p, dict(net.named_parameters())[n]) for n, p in lora.items())
    with pytest.raises(ValueError, match="has experts"):
        train_experts({"intel-xeon-avx2-1c": examples(0)}, tmp_path / "experts", tmp_path / "bad", config)


def test_continued_training_starts_from_a_checkpoint(tmp_path):
    """TLM-CT: train(init=TLM) continues the TLM weights; another variant's checkpoint is refused."""
    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model import Example
    from tvm_tensorgpt.model.checkpoint import load_checkpoint, save_checkpoint
    from tvm_tensorgpt.train.trainer import TrainConfig, train

    tlm_config = ModelConfig(**{**TINY.to_dict(), "hardware_grounding": False, "hardware_prompt": "target"})
    tlm = TensorGPTNetwork(tlm_config)
    save_checkpoint(tmp_path / "tlm", tlm, universe_standardizer())
    examples = [Example([1, 3, 7], [9, 10, 2])] * 8
    state = train(examples, tmp_path / "tlm-ct", tlm_config, TrainConfig(epochs=1, batch=4, threads=1), tmp_path / "tlm")
    assert state["init"] == str(tmp_path / "tlm") and state["epochs_done"] == 1
    continued, _ = load_checkpoint(tmp_path / "tlm-ct")
    embed = lambda n: n.lm.get_input_embeddings().weight  # noqa: E731
    assert not torch.equal(embed(continued), embed(tlm))
    fresh = TensorGPTNetwork(tlm_config)  # two small steps from TLM, far from a new initialisation
    assert (embed(continued) - embed(tlm)).abs().mean() < 0.2 * (embed(fresh) - embed(tlm)).abs().mean()
    save_checkpoint(tmp_path / "tensorgpt", tiny_net(), universe_standardizer())
    with pytest.raises(ValueError, match="same variant"):
        train(examples, tmp_path / "bad", tlm_config, TrainConfig(epochs=1, batch=4, threads=1), tmp_path / "tensorgpt")


def test_validation_split_is_the_same_every_epoch(tmp_path, monkeypatch):
    """Base training runs one epoch per call (to checkpoint each); the held-out examples must not
    change between epochs, or later validation losses are measured on trained-on examples."""
    from tvm_tensorgpt.model import Example
    from tvm_tensorgpt.train import trainer

    seen = []
    real = trainer.evaluate
    monkeypatch.setattr(trainer, "evaluate", lambda net, valid, *a: seen.append([e.prompt for e in valid]) or real(net, valid, *a))
    examples = [Example([1, 3, 7 + i], [9, 10, 2], tuple([0.0] * 24)) for i in range(40)]
    trainer.train(examples, tmp_path / "base", TINY, trainer.TrainConfig(epochs=3, batch=8, threads=1))
    assert len(seen) == 3 and seen[0] == seen[1] == seen[2]


def test_gpu_validity_labels_train_a_gpu_expert(tmp_path):
    """`data validity` labels unmasked CUDA candidates of training tasks with VerifyGPUCode for a
    source GPU (resumable, never the held-out Orin nor a CPU); the verified ones are weight-1
    examples, and `train --stage experts --validity-dir` gives that GPU an expert of its own."""
    from tvm.s_tir import meta_schedule as ms

    from tvm_tensorgpt.cli import main
    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model.checkpoint import load_checkpoint, read_config
    from tvm_tensorgpt.train.validity import _labelled, validity_examples

    labels = tmp_path / "validity"
    argv = ["data", "validity", "--profile", "rtx4090", "--per-task", "6", "--tasks", "12", "--out", str(labels)]
    assert main(argv) == 0
    rows = _labelled(labels / "rtx4090.jsonl.gz")
    assert len(rows) == 72 and 0 < sum(r["verified"] for r in rows) < 72
    assert main(argv) == 0 and len(_labelled(labels / "rtx4090.jsonl.gz")) == 72  # resumed: nothing twice
    assert main(argv[:3] + ["jetson-orin"] + argv[4:]) == 2
    assert main(argv[:3] + ["intel-xeon-avx2-1c"] + argv[4:]) == 2

    data = tmp_path / "records"
    ms.tune_tir(get_workload("matmul-128").build(), get_profile("intel-xeon-sse42-1c").target, str(data / "intel-xeon-sse42-1c"),
                max_trials_global=8, num_trials_per_iter=8, strategy="replay-trace", builder="tensorgpt",
                num_tuning_cores=1)  # fmt: skip
    base, experts = tmp_path / "base", tmp_path / "experts"
    tiny = ["--data-dir", str(data), "--epochs", "1", "--batch", "4", "--hidden", "32", "--layers", "1"]
    assert main(["train", "--out", str(base), *tiny]) == 0
    examples = validity_examples(labels / "rtx4090.jsonl.gz", read_config(base), universe_standardizer())
    assert examples and all(e.weight == 1.0 and e.hardware is not None for e in examples)
    assert main(["train", "--stage", "experts", "--base", str(base), "--out", str(experts),
                 "--validity-dir", str(labels), *tiny]) == 0  # fmt: skip
    assert load_checkpoint(experts)[0].config.experts == ("intel-xeon-sse42-1c", "rtx4090")
    assert main(["train", "--stage", "experts", "--base", str(base), "--out", str(tmp_path / "x"),
                 "--validity-dir", str(tmp_path), *tiny]) == 2  # fmt: skip


def test_validation_holds_out_whole_tasks():
    """The validation loss must measure workloads the model never trained on: a task's examples
    are all in validation or all in training, and the same seed holds out the same tasks."""
    from tvm_tensorgpt.model import Example
    from tvm_tensorgpt.train.trainer import TrainConfig, _split

    examples = [Example([1, 3, 7], [9, 10 + i, 2], task=1000 + i % 40) for i in range(400)]
    config = TrainConfig(validation=0.1)
    training, valid = _split(examples, config)
    held = {e.task for e in valid}
    assert len(held) == 4 and held.isdisjoint(e.task for e in training) and len(training) + len(valid) == 400
    assert {e.task for e in _split(list(reversed(examples)), config)[1]} == held  # order does not matter
    assert {e.task for e in _split(examples, TrainConfig(validation=0.1, seed=1))[1]} != held
    untasked = [Example([1, 3, 7], [9, 10 + i, 2]) for i in range(40)]  # e.g. GPU validity labels
    assert [len(part) for part in _split(untasked, config)] == [36, 4]


def test_distilled_examples_are_the_cost_models_favourites(tmp_path, capsys):
    """`data distil` keeps the shipped cost model's best of a prior pool per (task, profile),
    resumes, refuses other settings, and `train --distilled` learns from them."""
    import json

    import numpy as np
    from tvm.s_tir.meta_schedule.arg_info import ArgInfo
    from tvm.s_tir.meta_schedule.search_strategy import MeasureCandidate
    from tvm.target import Target

    from tvm_tensorgpt.cli import main
    from tvm_tensorgpt.costmodel import DEFAULT_COST_MODEL, Pretrained
    from tvm_tensorgpt.costmodel.features import candidate_features
    from tvm_tensorgpt.language import VOCAB, decode_response
    from tvm_tensorgpt.language.design import design_context
    from tvm_tensorgpt.model.config import variant_config
    from tvm_tensorgpt.train.distill import distilled_examples
    from tvm_tensorgpt.tvm_glue import resolved_postprocs
    from tvm_tensorgpt.workloads.tasks import get_task

    data = tmp_path / "records"
    (data / "intel-xeon-sse42-1c").mkdir(parents=True)  # the source profiles are the folders there
    out = tmp_path / "distilled.jsonl"
    argv = ["data", "distil", "--out", str(out), "--data-dir", str(data), "--tasks", "1", "--pool", "24", "--keep", "3",
            "--threads", "1"]  # fmt: skip
    assert main(argv) == 0 and "1 (task, profile) pairs" in capsys.readouterr().out
    header, *rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert header["config"]["pool"] == 24 and header["trained"]["records"] > 0
    assert len(rows) == 3 and [r["rank"] for r in rows] == [0, 1, 2]
    margins = [r["margin"] for r in rows]
    assert margins == sorted(margins, reverse=True)
    # each kept schedule, realised again from its decisions, scores what the file says
    profile, model = get_profile(rows[0]["profile"]), Pretrained.load(DEFAULT_COST_MODEL)
    context, sketches = design_context(get_task(rows[0]["task"]).mod, Target(profile.target))
    for row in rows:
        decisions = [tuple(d) if isinstance(d, list) else d for d in row["decisions"]]
        sch = sketches[row["sketch"]].realise(decisions, resolved_postprocs(context)).schedule
        candidate = MeasureCandidate(sch, ArgInfo.from_entry_func(sch.mod, remove_preproc=True))
        score = model.margin(candidate_features(context, [candidate], model.standardizer(profile)))[0]
        assert np.isclose(score, row["margin"], atol=1e-4)
    assert main(argv) == 0 and "0 (task, profile) pairs" in capsys.readouterr().out  # resumed: nothing new
    assert main(argv[:-4] + ["--keep", "5"]) == 2 and "resume with the same settings" in capsys.readouterr().err
    examples = distilled_examples(out, variant_config("tensorgpt"))["intel-xeon-sse42-1c"]
    assert len(examples) == 3 and all(e.weight == 1.0 and len(e.hardware) == 24 for e in examples)
    decode_response(sketches[rows[0]["sketch"]], VOCAB.decode(examples[0].response))
    # training on them (the profile folder holds no records: the distilled examples are all it has)
    ckpt = tmp_path / "ckpt"
    assert main(["train", "--out", str(ckpt), "--data-dir", str(data), "--distilled", str(out), "--epochs", "1",
                 "--batch", "2", "--hidden", "32", "--layers", "1"]) == 0  # fmt: skip
    state = json.loads((ckpt / "training.json").read_text())
    assert state["examples"] == 3 and state["data"]["distilled"]["file"] == str(out)
    assert main(["train", "--out", str(ckpt), "--data-dir", str(data), "--distilled", str(tmp_path / "none")]) == 2
