"""The generator network: prefix gradients, cached decoding, padding, bad inputs."""

import numpy as np
import pytest
import torch

from tvm_tensorgpt.model import ModelConfig, TensorGPTNetwork

torch.set_num_threads(1)
TINY = ModelConfig(hidden=32, layers=2, heads=2, intermediate=64, prefix_slots=3, prefix_hidden=16)


def _net(config: ModelConfig = TINY) -> TensorGPTNetwork:
    torch.manual_seed(0)
    return TensorGPTNetwork(config).eval()


def test_prefix_receives_gradients_and_changes_logits():
    net = _net().train()
    ids = torch.randint(7, TINY.vocab_size, (2, 6))
    mask = torch.ones_like(ids)
    hardware = torch.randn(2, 24, requires_grad=True)
    logits, _ = net(ids, mask, hardware)
    logits.sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in net.prefix.parameters())
    assert hardware.grad.abs().sum() > 0
    other, _ = net(ids, mask, torch.randn(2, 24))
    assert not torch.allclose(logits, other)


def test_cached_decoding_equals_teacher_forcing():
    net = _net()
    ids = torch.randint(7, TINY.vocab_size, (2, 9))
    hardware = torch.randn(2, 24)
    with torch.no_grad():
        full, _ = net(ids, torch.ones_like(ids), hardware)
        logits, cache = net(ids[:, :5], torch.ones(2, 5, dtype=torch.long), hardware)
        steps = [logits]
        for t in range(5, 9):
            mask = torch.ones(2, t + 1, dtype=torch.long)
            step, cache = net(ids[:, t : t + 1], mask, cache=cache, past_tokens=torch.full((2,), t))
            steps.append(step)
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)


def test_left_padding_does_not_change_a_sequence():
    net = _net()
    ids = torch.randint(7, TINY.vocab_size, (1, 6))
    hardware = torch.randn(1, 24)
    padded = torch.cat([torch.zeros(1, 3, dtype=torch.long), ids], dim=1)
    mask = torch.cat([torch.zeros(1, 3, dtype=torch.long), torch.ones(1, 6, dtype=torch.long)], dim=1)
    with torch.no_grad():
        plain, _ = net(ids, torch.ones_like(ids), hardware)
        shifted, _ = net(padded, mask, hardware)
    assert torch.allclose(plain, shifted[:, 3:], atol=1e-5)


def test_without_hardware_grounding_there_is_no_prefix():
    net = _net(ModelConfig(**{**TINY.to_dict(), "hardware_grounding": False}))
    assert net.prefix is None and net.prefix_len == 0
    ids = torch.randint(7, TINY.vocab_size, (1, 4))
    logits, _ = net(ids, torch.ones_like(ids))
    assert logits.shape == (1, 4, TINY.vocab_size)


@pytest.mark.parametrize("hardware", [torch.randn(2, 23), torch.full((2, 24), float("nan")), None])
def test_bad_hardware_vectors_are_refused(hardware):
    net = _net()
    ids = torch.randint(7, TINY.vocab_size, (2, 4))
    with pytest.raises(ValueError, match="hardware"):
        net(ids, torch.ones_like(ids), hardware)


def test_config_round_trip_and_vocabulary_mismatch():
    assert ModelConfig.from_dict(TINY.to_dict()) == TINY
    with pytest.raises(ValueError, match="retrain"):
        ModelConfig.from_dict({**TINY.to_dict(), "vocab_size": 100})
    with pytest.raises(ValueError, match="does not know"):
        ModelConfig.from_dict({**TINY.to_dict(), "flux_capacitor": 1})


def test_default_feed_forward_width_is_the_shipped_checkpoints():
    """Left out, the width is derived from ``hidden`` as the training recipes do (8/3 × 256 = 682)."""
    from tvm_tensorgpt.model.checkpoint import read_config
    from tvm_tensorgpt.model.generator import DEFAULT_CHECKPOINT

    assert ModelConfig().intermediate == read_config(DEFAULT_CHECKPOINT).intermediate == 682
    assert ModelConfig(hidden=96).intermediate == 256 and TINY.intermediate == 64


def test_tiny_model_overfits_records_and_regenerates_them(task_spaces):
    """Prompt -> decisions end to end: SFT on three records, then masked greedy decoding."""
    from tvm_tensorgpt.language import VOCAB, prompt_tokens, response_tokens
    from tvm_tensorgpt.model.generate import SamplingConfig, sample_decisions
    from tvm_tensorgpt.train.sft import Example, collate, loss_on

    _, _, sketches = task_spaces["matmul-128"]
    hardware = torch.randn(24)
    examples = [
        Example(VOCAB.encode(prompt_tokens(s, ["HW_CPU_X86"])), VOCAB.encode(response_tokens(s, s.decisions)),
                tuple(hardware.tolist()))
        for s in sketches
    ]  # fmt: skip
    net = _net().train()
    optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)
    batch = collate(examples)
    for _ in range(400):
        optimizer.zero_grad()
        loss = loss_on(net, batch)
        loss.backward()
        optimizer.step()
    assert float(loss) < 0.02
    decoded = sample_decisions(net, sketches, ["HW_CPU_X86"], hardware.expand(len(sketches), 24),
                               torch.Generator().manual_seed(0), SamplingConfig(temperature=0))  # fmt: skip
    assert decoded == [s.decisions for s in sketches]
    # sampling at temperature 1 stays legal (masked) and still decodes complete decision sets
    sampled = sample_decisions(net, sketches * 4, ["HW_CPU_X86"], hardware.expand(12, 24),
                               torch.Generator().manual_seed(1))  # fmt: skip
    for sketch, decisions in zip(sketches * 4, sampled):
        for slot, d in zip(sketch.slots, decisions):
            if slot.kind == "tile":
                assert int(torch.tensor(d).prod()) == slot.extent


def test_checkpoint_round_trip_and_bad_files(tmp_path):
    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model.checkpoint import CheckpointError, load_checkpoint, save_checkpoint

    net = _net()
    path = save_checkpoint(tmp_path / "ckpt", net, universe_standardizer())
    loaded, standardizer = load_checkpoint(path)
    ids = torch.randint(7, TINY.vocab_size, (1, 5))
    hardware = torch.randn(1, 24)
    with torch.no_grad():
        assert torch.allclose(net(ids, torch.ones_like(ids), hardware)[0], loaded(ids, torch.ones_like(ids), hardware)[0])
    assert standardizer == universe_standardizer()
    (path / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(CheckpointError, match="model.safetensors is corrupt.*python -m tvm_tensorgpt train"):
        load_checkpoint(path)
    (path / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="missing"):
        load_checkpoint(path)


def test_model_generator_in_a_real_tune(tmp_path, llvm_target):
    """A (random) model drives strategy="tensorgpt": masked decoding keeps candidates valid."""
    from tvm.s_tir import meta_schedule as ms

    import tvm_tensorgpt
    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model.generator import ModelGenerator
    from tvm_tensorgpt.workloads import get_workload

    stats = tvm_tensorgpt.TuningStats()
    strategy = tvm_tensorgpt.TensorGPTSearchStrategy(ModelGenerator(_net(), universe_standardizer()), stats=stats)
    database = ms.tune_tir(get_workload("conv2d-resnet").build(), llvm_target, str(tmp_path), max_trials_global=8,
                           num_trials_per_iter=8, strategy=strategy, space="tensorgpt", builder="tensorgpt",
                           num_tuning_cores=2)  # fmt: skip
    total = stats.total()
    assert total.generated >= 8 and total.valid >= 0.99 * total.generated
    assert len(database.get_all_tuning_records()) == 8


def test_examples_from_measured_records(tmp_path, llvm_target):
    """Records of a real tune become (prompt, response) examples that decode to their traces."""
    from tvm.s_tir import meta_schedule as ms

    from tvm_tensorgpt.hardware import get_profile, universe_standardizer
    from tvm_tensorgpt.language import VOCAB, decode_response, prompt_tokens
    from tvm_tensorgpt.train.dataset import design_sketches, examples_from_database
    from tvm_tensorgpt.workloads import get_workload

    profile = get_profile("host-avx2-1c")
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


def test_train_cli_runs_and_resumes(tmp_path, llvm_target):
    """`tensorgpt train` on a tiny database: an epoch, a checkpoint, a resume, a clear refusal."""
    import json

    from tvm.s_tir import meta_schedule as ms

    from tvm_tensorgpt.cli import main
    from tvm_tensorgpt.hardware import get_profile
    from tvm_tensorgpt.model.checkpoint import load_checkpoint
    from tvm_tensorgpt.workloads import get_workload

    data = tmp_path / "records"
    ms.tune_tir(get_workload("matmul-128").build(), get_profile("host-sse42-1c").target, str(data / "host-sse42-1c"),
                max_trials_global=8, num_trials_per_iter=8, strategy="replay-trace", builder="tensorgpt",
                num_tuning_cores=1)  # fmt: skip
    out = tmp_path / "ckpt"
    argv = ["train", "--out", str(out), "--data-dir", str(data), "--epochs", "1", "--batch", "4", "--hidden", "32",
            "--layers", "1"]  # fmt: skip
    assert main(argv) == 0
    state = json.loads((out / "training.json").read_text())
    assert state["epochs_done"] == 1 and state["history"][0]["valid_loss"] > 0
    assert main(argv[:5] + ["--epochs", "2"] + argv[7:]) == 0  # resumes: one more epoch
    assert json.loads((out / "training.json").read_text())["epochs_done"] == 2
    net, _ = load_checkpoint(out)
    assert net.config.hidden == 32
    assert main(["train", "--out", str(tmp_path / "x"), "--data-dir", str(data), "--profiles", "host-avx2-2c"]) == 2
    # bundling: float16 weights, the training history in provenance.json, loads like the source
    assert main(["bundle", str(out), "--out", str(tmp_path / "bundled"), "--note", "test"]) == 0
    provenance = json.loads((tmp_path / "bundled" / "provenance.json").read_text())
    assert provenance["note"] == "test" and provenance["training"][str(out)]["epochs_done"] == 2
    assert provenance["bytes"] < 0.6 * (out / "model.safetensors").stat().st_size
    assert load_checkpoint(tmp_path / "bundled")[0].config == net.config
    assert main(["bundle", str(tmp_path / "x"), "--out", str(tmp_path / "y")]) == 2  # not a checkpoint


EXPERTS = ModelConfig(**{**TINY.to_dict(), "experts": ("host-avx2-1c", "host-sse42-2c", "host-sse42-1c")})


def _expert_net(config: ModelConfig = EXPERTS) -> TensorGPTNetwork:
    net = _net(config)
    with torch.no_grad():  # peft starts lora_B at zero; give the experts something to say
        for name, param in net.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.5)
    return net


def _devices_and_workloads():
    from tvm_tensorgpt.hardware import get_profile, universe_standardizer
    from tvm_tensorgpt.workloads.features import workload_features
    from tvm_tensorgpt.workloads.tasks import get_task

    st = universe_standardizer()
    hw = {n: torch.tensor(st(get_profile(n)), dtype=torch.float32)[None] for n in ("rtx4090", "host-avx2-2c")}
    wl = {n: torch.tensor(workload_features(get_task(n).mod))[None] for n in ("bert/matmul1", "resnet18/max_pool2d")}
    return hw, wl


def test_router_weights_differ_between_devices_and_workloads():
    net = _expert_net()
    hw, wl = _devices_and_workloads()
    base = net.gates(hw["rtx4090"], wl["bert/matmul1"], 1)
    assert base.shape == (1, 3) and float(base.sum()) < 1  # the rest is the base channel
    assert not torch.allclose(base, net.gates(hw["host-avx2-2c"], wl["bert/matmul1"], 1))
    assert not torch.allclose(base, net.gates(hw["rtx4090"], wl["resnet18/max_pool2d"], 1))


def test_ablation_flags_change_only_what_they_should():
    hw, wl = _devices_and_workloads()
    uniform = _expert_net(ModelConfig(**{**EXPERTS.to_dict(), "routing": "uniform"}))
    assert uniform.router is None
    assert torch.allclose(uniform.gates(hw["rtx4090"], wl["bert/matmul1"], 1), torch.full((1, 3), 0.25))
    blind = _expert_net(ModelConfig(**{**EXPERTS.to_dict(), "workload_aware": False}))
    assert torch.allclose(blind.gates(hw["rtx4090"], wl["bert/matmul1"], 1), blind.gates(hw["rtx4090"], None, 1))
    assert not torch.allclose(blind.gates(hw["rtx4090"], None, 1), blind.gates(hw["host-avx2-2c"], None, 1))
    plain = _net()
    assert plain.router is None and not any("lora" in n for n, _ in plain.named_parameters())
    # the same seed builds the same base weights: only the flags' parts differ
    names = {n for n, _ in _expert_net().named_parameters()} - {n for n, _ in uniform.named_parameters()}
    assert names and all(n.startswith("router.") for n in names)


def test_gates_mix_experts_over_the_base():
    net = _expert_net()
    ids = torch.randint(7, EXPERTS.vocab_size, (1, 6))
    mask = torch.ones_like(ids)
    hardware = torch.randn(1, 24)
    with torch.no_grad():
        off, _ = net(ids, mask, hardware, gates=torch.zeros(1, 3))
        with net.lm.disable_adapter():
            net._gates = torch.zeros(1, 3)
            base, _ = net.lm(input_ids=ids, attention_mask=torch.ones(1, 6 + net.prefix_len, dtype=torch.long),
                             position_ids=torch.arange(6)[None], cache=net.start(hardware, 1)).to_tuple()[:2]
        one, _ = net(ids, mask, hardware, gates=torch.tensor([[1.0, 0.0, 0.0]]))
        two, _ = net(ids, mask, hardware, gates=torch.tensor([[0.0, 1.0, 0.0]]))
    assert torch.allclose(off, base, atol=1e-5)  # zero gates: the base model
    assert not torch.allclose(one, off) and not torch.allclose(one, two)


def test_cached_decoding_with_experts_and_checkpoint_round_trip(tmp_path):
    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model.checkpoint import load_checkpoint, save_checkpoint

    net = _expert_net()
    ids = torch.randint(7, EXPERTS.vocab_size, (2, 7))
    hardware, workload = torch.randn(2, 24), torch.randn(2, 12)
    with torch.no_grad():
        full, _ = net(ids, torch.ones_like(ids), hardware, workload=workload)
        first, cache = net(ids[:, :4], torch.ones(2, 4, dtype=torch.long), hardware, workload=workload)
        steps = [first]
        for t in range(4, 7):
            step, cache = net(ids[:, t : t + 1], torch.ones(2, t + 1, dtype=torch.long), hardware, cache=cache,
                              past_tokens=torch.full((2,), t), workload=workload)  # fmt: skip
            steps.append(step)
    assert torch.allclose(torch.cat(steps, dim=1), full, atol=1e-5)
    loaded, _ = load_checkpoint(save_checkpoint(tmp_path / "experts", net, universe_standardizer()))
    assert loaded.config.experts == EXPERTS.experts
    with torch.no_grad():
        again, _ = loaded(ids, torch.ones_like(ids), hardware, workload=workload)
    assert torch.allclose(again, full, atol=1e-5)


def test_expert_and_router_stages(tmp_path):
    """Experts stage: only that expert's LoRA moves; router stage: only the router moves."""
    import random

    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model.checkpoint import load_checkpoint, save_checkpoint
    from tvm_tensorgpt.train.sft import Example
    from tvm_tensorgpt.train.trainer import TrainConfig, train_experts

    base = save_checkpoint(tmp_path / "base", _net(), universe_standardizer())
    rng = random.Random(0)

    def examples(tag: int) -> list[Example]:
        return [Example([1, 3, 7 + tag], [rng.randrange(7, 40) for _ in range(4)] + [2],
                        tuple([float(tag)] * 24), 1.0, tuple([0.5] * 12)) for _ in range(12)]  # fmt: skip

    by_profile = {"host-avx2-1c": examples(0), "host-sse42-1c": examples(1)}
    config = TrainConfig(epochs=1, batch=4, threads=1)
    state = train_experts(by_profile, base, tmp_path / "experts", config)
    assert state["done"] == ["host-avx2-1c", "host-sse42-1c", "router"]
    net, _ = load_checkpoint(tmp_path / "experts")
    trained_base, _ = load_checkpoint(base)
    base_weights = trained_base.lm.state_dict()
    for name, value in net.lm.get_base_model().state_dict().items():
        if "lora_" not in name and "base_layer" not in name and name in base_weights:
            assert torch.equal(value, base_weights[name]), name  # the base stayed frozen
    moved = [n for n, p in net.named_parameters() if "lora_B" in n and p.abs().sum() > 0]
    assert any(".host-avx2-1c." in n for n in moved) and any(".host-sse42-1c." in n for n in moved)
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
        train_experts({"host-avx2-1c": examples(0)}, tmp_path / "experts", tmp_path / "bad", config)


def test_continued_training_starts_from_a_checkpoint(tmp_path):
    """TLM-CT: train(init=TLM) continues the TLM weights; another variant's checkpoint is refused."""
    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model.checkpoint import load_checkpoint, save_checkpoint
    from tvm_tensorgpt.train.sft import Example
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
    save_checkpoint(tmp_path / "tensorgpt", _net(), universe_standardizer())
    with pytest.raises(ValueError, match="same variant"):
        train(examples, tmp_path / "bad", tlm_config, TrainConfig(epochs=1, batch=4, threads=1), tmp_path / "tensorgpt")


def test_variants_and_their_hardware_prompts():
    from tvm_tensorgpt.hardware import get_profile
    from tvm_tensorgpt.model.config import VARIANTS, variant_config

    profile = get_profile("host-avx2-1c")
    tlm = variant_config("tlm", hidden=32, heads=2)
    assert not tlm.hardware_grounding and not tlm.experts
    assert tlm.hardware_tokens(profile) == ["[TGT]", "TK_kind", "TV_llvm", "TK_mcpu", "TV_core-avx2", "TK_num-cores", "N1"]
    assert variant_config("tensorgpt").hardware_tokens(profile) == ["HW_CPU_X86"]
    assert variant_config("no-routing").routing == "uniform" and not variant_config("no-wa").workload_aware
    assert set(VARIANTS) == {"tensorgpt", "no-hg", "no-routing", "no-wa", "tlm"}
    with pytest.raises(ValueError, match="unknown variant"):
        variant_config("gpt-5")


def test_default_and_named_generators(tmp_path, monkeypatch):
    """strategy="tensorgpt" takes the bundled checkpoint, falls back to the prior without one, and
    accepts "prior" or a checkpoint folder; anything else is refused with the choices."""
    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model import generator as gen
    from tvm_tensorgpt.model.checkpoint import save_checkpoint
    from tvm_tensorgpt.plugin.generator import PriorGenerator

    monkeypatch.setattr(gen, "DEFAULT_CHECKPOINT", tmp_path / "not-bundled")
    assert isinstance(gen.resolve_generator(None), PriorGenerator)
    assert isinstance(gen.resolve_generator("prior"), PriorGenerator)
    path = save_checkpoint(tmp_path / "ckpt", _net(), universe_standardizer())
    monkeypatch.setattr(gen, "DEFAULT_CHECKPOINT", path)
    default = gen.resolve_generator("default")
    assert isinstance(default, gen.ModelGenerator) and str(path) in default.describe()
    assert isinstance(gen.resolve_generator(str(path)), gen.ModelGenerator)
    with pytest.raises(ValueError, match="'default', 'prior' nor a checkpoint folder"):
        gen.resolve_generator(str(tmp_path / "nowhere"))


def test_half_precision_checkpoint_is_half_the_size(tmp_path):
    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model.checkpoint import load_checkpoint, save_checkpoint

    net = _net()
    full = save_checkpoint(tmp_path / "full", net, universe_standardizer())
    half = save_checkpoint(tmp_path / "half", net, universe_standardizer(), dtype=torch.float16)
    size = lambda p: (p / "model.safetensors").stat().st_size  # noqa: E731
    assert size(half) < 0.6 * size(full)
    loaded, _ = load_checkpoint(half)
    assert next(loaded.parameters()).dtype == torch.float32
    ids = torch.randint(7, TINY.vocab_size, (1, 5))
    hardware = torch.randn(1, 24)
    with torch.no_grad():
        assert torch.allclose(net(ids, torch.ones_like(ids), hardware)[0], loaded(ids, torch.ones_like(ids), hardware)[0],
                              atol=2e-2)  # fmt: skip


def test_online_adaptation_learns_from_measurements(task_spaces, llvm_target):
    """observe() + the next generate(): a few SFT steps make the fastest measured schedule likelier,
    on a copy (the shared network is untouched); without adaptation nothing is stored."""
    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model.generator import AdaptConfig, ModelGenerator, _example
    from tvm_tensorgpt.train.sft import collate, loss_on

    _, _, sketches = task_spaces["matmul-128"]
    net = _net()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    adapting = ModelGenerator(net, universe_standardizer(), adapt=AdaptConfig(steps=8, lr=1e-2))
    adapting.prepare(llvm_target)
    fast, slow = sketches[0], sketches[-1]
    batch = collate([_example(fast, fast.decisions, 1.0, adapting._vector(), net, adapting.profile)])
    with torch.no_grad():
        start = float(loss_on(adapting.net, batch))
    adapting.observe(fast, fast.decisions, 1e-4)
    adapting.observe(slow, slow.decisions, None)  # failed: ignored
    proposals = adapting.generate(sketches, 4, np.random.default_rng(0))
    assert len(proposals) == 4 and len(adapting.measured) == 1
    with torch.no_grad():
        assert float(loss_on(adapting.net, batch)) < 0.75 * start
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    plain = ModelGenerator(net, universe_standardizer())
    plain.observe(fast, fast.decisions, 1e-4)
    assert plain.measured == [] and plain.net is net


def test_validation_split_is_the_same_every_epoch(tmp_path, monkeypatch):
    """Base training runs one epoch per call (to checkpoint each); the held-out examples must not
    change between epochs, or later validation losses are measured on trained-on examples."""
    from tvm_tensorgpt.train import trainer
    from tvm_tensorgpt.train.sft import Example

    seen = []
    real = trainer.evaluate
    monkeypatch.setattr(trainer, "evaluate", lambda net, valid, *a: seen.append([e.prompt for e in valid]) or real(net, valid, *a))
    examples = [Example([1, 3, 7 + i], [9, 10, 2], tuple([0.0] * 24)) for i in range(40)]
    trainer.train(examples, tmp_path / "base", TINY, trainer.TrainConfig(epochs=3, batch=8, threads=1))
    assert len(seen) == 3 and seen[0] == seen[1] == seen[2]


def test_a_device_far_from_every_expert_gets_the_base_model(task_spaces):
    """Jetson Orin is unlike the three host-CPU experts: the router is bypassed (base alone);
    the held-out host profile is close to them and keeps its routed mixture."""
    import tvm

    from tvm_tensorgpt.hardware import get_profile, universe_standardizer
    from tvm_tensorgpt.model.generate import SamplingConfig
    from tvm_tensorgpt.model.generator import ModelGenerator

    _, _, sketches = task_spaces["matmul-128"]
    generator = ModelGenerator(_expert_net(), universe_standardizer(), sampling=SamplingConfig(temperature=0))
    generator.prepare(tvm.target.Target(get_profile("jetson-orin").target))
    assert generator.base_only
    far = generator.generate(sketches, 3, np.random.default_rng(0))
    generator.net.router.mlp[-1].bias.data += torch.tensor([5.0, 0.0, 0.0, -5.0])  # route to an expert
    assert generator.generate(sketches, 3, np.random.default_rng(0)) == far  # still the base alone
    generator.base_only = False  # the same device through the router: the experts change the proposals
    assert generator.generate(sketches, 3, np.random.default_rng(0)) != far
    generator.prepare(tvm.target.Target(get_profile("host-avx2-2c").target))
    assert not generator.base_only
