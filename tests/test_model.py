"""The generator network: prefix gradients, cached decoding, padding, bad inputs."""

import pytest
import torch
from conftest import EXPERTS, TINY, expert_net, tiny_net

from tvm_tensorgpt.model import ModelConfig


def test_prefix_receives_gradients_and_changes_logits():
    net = tiny_net().train()
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
    net = tiny_net()
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


@pytest.mark.parametrize("variant", ["plain", "no-prefix", "experts", "fixed-gates"])
def test_prompt_decoder_equals_teacher_forcing(variant):
    """Sampling's decoder (shared prompt, per-row buffers, merged experts, rows with the same tokens
    computed once) gives the logits of the network's own forward over prompt + response."""
    from tvm_tensorgpt.model.decoder import PromptDecoder

    if variant == "no-prefix":
        net = tiny_net(ModelConfig(**{**TINY.to_dict(), "hardware_grounding": False}))
    else:
        net = tiny_net() if variant == "plain" else expert_net()
    gates = torch.tensor([0.2, 0.5, 0.1]) if variant == "fixed-gates" else None
    hardware = None if variant == "no-prefix" else torch.randn(24)
    workload = torch.randn(12) if net.config.experts else None
    rows, steps, prompt = 5, 6, torch.randint(7, TINY.vocab_size, (9,))
    response = torch.randint(7, TINY.vocab_size, (rows, steps))
    response[1:4, :2] = response[0, :2]  # shared first tokens that branch later
    response[2, :4] = response[0, :4]
    decoder = PromptDecoder(net, prompt.tolist(), hardware, workload, gates, rows, steps)
    everything = torch.arange(TINY.vocab_size)
    decoded = [decoder.logits(everything)]
    for t in range(steps - 1):
        decoder.feed(response[:, t].tolist())
        decoded.append(decoder.logits(everything))
    ids = torch.cat([prompt.expand(rows, -1), response], dim=1)
    hardware, workload, gates = (None if x is None else x.expand(rows, -1) for x in (hardware, workload, gates))
    with torch.no_grad():
        full, _ = net(ids, torch.ones_like(ids), hardware, workload=workload, gates=gates)
    assert torch.allclose(torch.stack(decoded, dim=1), full[:, len(prompt) - 1 : -1], atol=1e-5)
    assert torch.allclose(decoder.logits(torch.tensor([9, 3])), decoded[-1][:, [9, 3]])


def test_prompt_decoder_reuses_a_prompt_until_the_weights_change():
    """A prompt asked for again (every round of a tune) is not run again; a training step (an
    adapting generator's) makes the next decoder run it with the new weights."""
    from tvm_tensorgpt.model.decoder import _PROMPTS, PromptDecoder

    net = expert_net()
    prompt, hardware, workload = torch.randint(7, TINY.vocab_size, (9,)).tolist(), torch.randn(24), torch.randn(12)
    everything = torch.arange(TINY.vocab_size)
    before = PromptDecoder(net, prompt, hardware, workload, None, 2, 3).logits(everything)
    assert len(_PROMPTS[net]) == 1
    assert torch.equal(PromptDecoder(net, prompt, hardware, workload, None, 2, 3).logits(everything), before)
    assert len(_PROMPTS[net]) == 1
    optimizer = torch.optim.AdamW(net.parameters(), lr=0.05)
    logits, _ = net(torch.tensor([prompt]), torch.ones(1, 9, dtype=torch.long), hardware[None], workload=workload[None])
    logits[0, -1, 7].backward()
    optimizer.step()
    after = PromptDecoder(net, prompt, hardware, workload, None, 2, 3).logits(everything)
    with torch.no_grad():
        fresh, _ = net(torch.tensor([prompt]), torch.ones(1, 9, dtype=torch.long), hardware[None], workload=workload[None])
    assert not torch.allclose(after, before) and torch.allclose(after[0], fresh[0, -1], atol=1e-5)


def test_left_padding_does_not_change_a_sequence():
    net = tiny_net()
    ids = torch.randint(7, TINY.vocab_size, (1, 6))
    hardware = torch.randn(1, 24)
    padded = torch.cat([torch.zeros(1, 3, dtype=torch.long), ids], dim=1)
    mask = torch.cat([torch.zeros(1, 3, dtype=torch.long), torch.ones(1, 6, dtype=torch.long)], dim=1)
    with torch.no_grad():
        plain, _ = net(ids, torch.ones_like(ids), hardware)
        shifted, _ = net(padded, mask, hardware)
    assert torch.allclose(plain, shifted[:, 3:], atol=1e-5)


def test_without_hardware_grounding_there_is_no_prefix():
    net = tiny_net(ModelConfig(**{**TINY.to_dict(), "hardware_grounding": False}))
    assert net.prefix is None and net.prefix_len == 0
    ids = torch.randint(7, TINY.vocab_size, (1, 4))
    logits, _ = net(ids, torch.ones_like(ids))
    assert logits.shape == (1, 4, TINY.vocab_size)


@pytest.mark.parametrize("hardware", [torch.randn(2, 23), torch.full((2, 24), float("nan")), None])
def test_bad_hardware_vectors_are_refused(hardware):
    net = tiny_net()
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
    from tvm_tensorgpt.model.checkpoint import DEFAULT_CHECKPOINT, read_config

    assert ModelConfig().intermediate == read_config(DEFAULT_CHECKPOINT).intermediate == 682
    assert ModelConfig(hidden=96).intermediate == 256 and TINY.intermediate == 64


def test_tiny_model_overfits_records_and_regenerates_them(task_spaces):
    """Prompt -> decisions end to end: SFT on three records, then masked greedy decoding."""
    from tvm_tensorgpt.language import VOCAB, prompt_tokens, response_tokens
    from tvm_tensorgpt.model import Example, collate
    from tvm_tensorgpt.model.generate import SamplingConfig, sample_decisions

    _, _, sketches = task_spaces["matmul-128"]
    hardware = torch.randn(24)
    examples = [
        Example(VOCAB.encode(prompt_tokens(s, ["HW_CPU_X86"])), VOCAB.encode(response_tokens(s, s.decisions)),
                tuple(hardware.tolist()))
        for s in sketches
    ]  # fmt: skip
    net = tiny_net().train()
    optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)
    batch = collate(examples)
    for _ in range(400):
        optimizer.zero_grad()
        loss = net.loss(batch)
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
    # prior_mix moves sampling from the (over-confident) model towards uniform over the legal tokens
    rows = 32
    same = {}
    for mix in (0.0, 1.0):
        drawn = sample_decisions(net, [sketches[0]] * rows, ["HW_CPU_X86"], hardware.expand(rows, 24),
                                 torch.Generator().manual_seed(2), SamplingConfig(prior_mix=mix))  # fmt: skip
        same[mix] = sum(d == sketches[0].decisions for d in drawn) / rows
    assert same[0.0] >= 0.9 and same[1.0] <= 0.25, same
    with pytest.raises(ValueError, match="prior_mix"):
        SamplingConfig(prior_mix=1.5)


def test_checkpoint_round_trip_and_bad_files(tmp_path):
    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model.checkpoint import (
        CheckpointError,
        load_checkpoint,
        save_checkpoint,
    )

    net = tiny_net()
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


def _devices_and_workloads():
    from tvm_tensorgpt.hardware import get_profile, universe_standardizer
    from tvm_tensorgpt.workloads.features import workload_features
    from tvm_tensorgpt.workloads.tasks import get_task

    st = universe_standardizer()
    hw = {n: torch.tensor(st(get_profile(n)), dtype=torch.float32)[None] for n in ("rtx4090", "amd-zen3-avx2-2c")}
    wl = {n: torch.tensor(workload_features(get_task(n).mod))[None] for n in ("bert/matmul1", "resnet18/max_pool2d")}
    return hw, wl


def test_router_weights_differ_between_devices_and_workloads():
    net = expert_net()
    hw, wl = _devices_and_workloads()
    base = net.gates(hw["rtx4090"], wl["bert/matmul1"], 1)
    assert base.shape == (1, 3) and float(base.sum()) < 1  # the rest is the base channel
    assert not torch.allclose(base, net.gates(hw["amd-zen3-avx2-2c"], wl["bert/matmul1"], 1))
    assert not torch.allclose(base, net.gates(hw["rtx4090"], wl["resnet18/max_pool2d"], 1))


def test_ablation_flags_change_only_what_they_should():
    hw, wl = _devices_and_workloads()
    uniform = expert_net(ModelConfig(**{**EXPERTS.to_dict(), "routing": "uniform"}))
    assert uniform.router is None
    assert torch.allclose(uniform.gates(hw["rtx4090"], wl["bert/matmul1"], 1), torch.full((1, 3), 0.25))
    blind = expert_net(ModelConfig(**{**EXPERTS.to_dict(), "workload_aware": False}))
    assert torch.allclose(blind.gates(hw["rtx4090"], wl["bert/matmul1"], 1), blind.gates(hw["rtx4090"], None, 1))
    assert not torch.allclose(blind.gates(hw["rtx4090"], None, 1), blind.gates(hw["amd-zen3-avx2-2c"], None, 1))
    plain = tiny_net()
    assert plain.router is None and not any("lora" in n for n, _ in plain.named_parameters())
    # the same seed builds the same base weights: only the flags' parts differ
    names = {n for n, _ in expert_net().named_parameters()} - {n for n, _ in uniform.named_parameters()}
    assert names and all(n.startswith("router.") for n in names)


def test_gates_mix_experts_over_the_base():
    net = expert_net()
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

    net = expert_net()
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


def test_variants_and_their_hardware_prompts():
    from tvm_tensorgpt.hardware import get_profile
    from tvm_tensorgpt.model.config import VARIANTS, variant_config

    profile = get_profile("intel-xeon-avx2-1c")
    tlm = variant_config("tlm", hidden=32, heads=2)
    assert not tlm.hardware_grounding and not tlm.experts
    assert tlm.hardware_tokens(profile) == ["[TGT]", "TK_kind", "TV_llvm", "TK_mcpu", "TV_core-avx2", "TK_num-cores", "N1"]
    assert variant_config("tensorgpt").hardware_tokens(profile) == ["HW_CPU_X86"]
    assert variant_config("no-routing").routing == "uniform" and not variant_config("no-wa").workload_aware
    assert set(VARIANTS) == {"tensorgpt", "no-hg", "no-routing", "no-wa", "tlm"}
    with pytest.raises(ValueError, match="unknown variant"):
        variant_config("gpt-5")


def test_half_precision_checkpoint_is_half_the_size(tmp_path):
    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model.checkpoint import load_checkpoint, save_checkpoint

    net = tiny_net()
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
