"""Generators: the model-backed generator in a real tune, named generators, online adaptation, the
base-model fallback, and the CUDA validity of proposals."""

import numpy as np
import pytest
import torch
import tvm
from conftest import expert_net, make_context, tiny_net

from tvm_tensorgpt.generators import Generator, PriorGenerator
from tvm_tensorgpt.generators.validity import check_candidates
from tvm_tensorgpt.hardware import get_profile
from tvm_tensorgpt.language import Sketch
from tvm_tensorgpt.tvm_glue import cuda, load_tensor_intrinsics
from tvm_tensorgpt.workloads import get_workload


def test_model_generator_in_a_real_tune(tmp_path, llvm_target):
    """A (random) model drives strategy="tensorgpt": masked decoding keeps candidates valid, and
    every measurement is counted under the part of the search that proposed it. The rounds after
    the first make their whole pools by refinement, so refined candidates are measured whatever the
    cost model ranks first (with the default share and carried candidates it may choose none)."""
    from tvm.s_tir import meta_schedule as ms

    import tvm_tensorgpt
    from tvm_tensorgpt.generators.model import ModelGenerator
    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.workloads import get_workload

    stats = tvm_tensorgpt.TuningStats()
    search = tvm_tensorgpt.SearchConfig(carry=0.0, refine_share=(1.0, 1.0))
    strategy = tvm_tensorgpt.TensorGPTSearchStrategy(ModelGenerator(tiny_net(), universe_standardizer()),
                                                     search=search, stats=stats)  # fmt: skip
    database = ms.tune_tir(get_workload("conv2d-resnet").build(), llvm_target, str(tmp_path), max_trials_global=12,
                           num_trials_per_iter=4, strategy=strategy, space="tensorgpt", builder="tensorgpt",
                           num_tuning_cores=2)  # fmt: skip
    total = stats.total()
    assert total.generated >= 12 and total.valid >= 0.99 * total.generated
    assert len(database.get_all_tuning_records()) == 12
    # each round of 4 ranks a pool of 64 a trial, made anew; duplicates and invalid ones can thin it out
    assert total.rounds == 3 and total.slots == 3 * 256 and 12 <= total.pooled <= 3 * 256
    # rounds 2-3 refine what was measured before (their whole pools, topped up by the generator
    # where mutations run dry); each refined candidate names the proposal its chain started from
    origins = {"model", "prior", "refined from model", "refined from prior"}
    assert sum(total.measured_from.values()) == 12 and set(total.measured_from) <= origins
    assert any(o.startswith("refined from") for o in total.measured_from) and total.refined >= 1
    assert sum(stats.best_from().values()) == 1 and set(stats.best_from()) <= set(total.measured_from)


def test_default_and_named_generators(tmp_path, monkeypatch):
    """strategy="tensorgpt" takes the bundled checkpoint, falls back to the prior without one, and
    accepts "prior" or a checkpoint folder; anything else is refused with the choices."""
    from tvm_tensorgpt.generators import PriorGenerator, resolve_generator
    from tvm_tensorgpt.generators.model import ModelGenerator
    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model import checkpoint

    monkeypatch.setattr(checkpoint, "DEFAULT_CHECKPOINT", tmp_path / "not-bundled")
    assert isinstance(resolve_generator(None), PriorGenerator)
    assert isinstance(resolve_generator("prior"), PriorGenerator)
    path = checkpoint.save_checkpoint(tmp_path / "ckpt", tiny_net(), universe_standardizer())
    monkeypatch.setattr(checkpoint, "DEFAULT_CHECKPOINT", path)
    default = resolve_generator("default")
    assert isinstance(default, ModelGenerator) and str(path) in default.describe()
    assert isinstance(resolve_generator(str(path)), ModelGenerator)
    with pytest.raises(ValueError, match="neither default nor prior nor a checkpoint folder"):
        resolve_generator(str(tmp_path / "nowhere"))


class _Counting(Generator):
    """Uniform proposals (not a PriorGenerator), counting what it was asked for and told."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.asked = 0
        self.observed = 0

    def generate(self, sketches, num, rng):
        self.asked += num
        return PriorGenerator().generate(sketches, num, rng)

    def observe(self, sketch, decisions, latency_s):
        self.observed += 1

    def describe(self) -> str:
        return self.name


def test_mixture_splits_every_pool_and_the_strategy_mixes_in_the_prior(task_spaces):
    """A MixtureGenerator gives each part its weight's share of the proposals and every
    measurement; the strategy mixes ``prior_share`` of the prior into a model's proposals (not
    into the prior itself); bad weights are refused."""
    import tvm_tensorgpt
    from tvm_tensorgpt.generators import MixtureGenerator
    from tvm_tensorgpt.plugin.strategy import SearchConfig

    sketch = task_spaces["conv2d-resnet"][2][0]
    a, b = _Counting("a"), _Counting("b")
    mixture = MixtureGenerator([(a, 3.0), (b, 1.0)])
    proposals = mixture.generate([sketch], 400, np.random.default_rng(0))
    assert len(proposals) == 400 and a.asked + b.asked == 400 and 250 < a.asked < 350
    mixture.observe(sketch, proposals[0].decisions, 1e-3)
    assert a.observed == b.observed == 1
    assert mixture.describe() == "75% a + 25% b"
    with pytest.raises(ValueError, match="non-negative weights"):
        MixtureGenerator([(a, -1.0), (b, 1.0)])

    prior = PriorGenerator()
    assert tvm_tensorgpt.TensorGPTSearchStrategy(prior).generator is prior  # not mixed with itself
    assert tvm_tensorgpt.TensorGPTSearchStrategy(mixture).generator is mixture  # the caller's own mix
    mixed = tvm_tensorgpt.TensorGPTSearchStrategy(_Counting("model"), search=SearchConfig(prior_share=0.25))
    assert isinstance(mixed.generator, MixtureGenerator)
    assert mixed.generator.describe() == "75% model + 25% prior"
    # each proposal names the part that made it (Generator.origin: the class name, less "Generator")
    made = mixed.generator.generate([sketch], 200, np.random.default_rng(1))
    assert {p.origin for p in made} == {"_counting", "prior"}
    alone = tvm_tensorgpt.TensorGPTSearchStrategy(a, search=SearchConfig(prior_share=0.0)).generator
    assert alone is a
    # a model that mixes the prior in per token is not mixed again per sequence
    from tvm_tensorgpt.generators.model import ModelGenerator
    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model.generate import SamplingConfig

    per_token = ModelGenerator(tiny_net(), universe_standardizer(), sampling=SamplingConfig(prior_mix=0.5))
    assert tvm_tensorgpt.TensorGPTSearchStrategy(per_token).generator is per_token
    assert per_token.describe() == "network (50% prior per token)"
    plain = ModelGenerator(tiny_net(), universe_standardizer())
    assert isinstance(tvm_tensorgpt.TensorGPTSearchStrategy(plain).generator, MixtureGenerator)


def test_rows_decoded_ahead_serve_the_next_calls(task_spaces, llvm_target):
    """A sketch is decoded up to ``ahead`` rows at a time, at most ``ahead_factor`` times the rows
    asked: a later call that the kept rows cover decodes nothing; a generator that adapts (its
    distribution moves between rounds) keeps nothing."""
    from tvm_tensorgpt.generators.model import AdaptConfig, ModelGenerator
    from tvm_tensorgpt.hardware import universe_standardizer

    _, _, sketches = task_spaces["matmul-128"]
    generator = ModelGenerator(tiny_net(), universe_standardizer(), ahead=16, ahead_factor=2.0)
    generator.prepare(llvm_target)
    decoded = []
    real = generator._decode
    generator._decode = lambda sk, picks, *rest: decoded.append(len(picks)) or real(sk, picks, *rest)
    rng = np.random.default_rng(4)
    calls = [generator.generate(sketches[:1], n, rng) for n in (5, 4, 11, 6)]
    assert [len(c) for c in calls] == [5, 4, 11, 6]
    assert decoded == [10, 16]  # 5 asked: 10 decoded, 4 served; 11 asked, 1 kept: 16 (not 20) decoded, 6 served
    assert all(p.sketch_index == 0 and len(p.decisions) == len(sketches[0].slots) for c in calls for p in c)
    assert generator._kept(sketches[:1]) == [[]]
    adapting = ModelGenerator(tiny_net(), universe_standardizer(), ahead=16, adapt=AdaptConfig(steps=1))
    adapting.prepare(llvm_target)
    assert len(adapting.generate(sketches[:1], 5, rng)) == 5 and adapting._kept(sketches[:1]) == [[]]


def test_online_adaptation_learns_from_measurements(task_spaces, llvm_target):
    """observe() + the next generate(): a few SFT steps make the fastest measured schedule likelier,
    on a copy (the shared network is untouched); without adaptation nothing is stored."""
    from tvm_tensorgpt.generators.model import AdaptConfig, ModelGenerator, _example
    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model import collate

    _, _, sketches = task_spaces["matmul-128"]
    net = tiny_net()
    before = {k: v.clone() for k, v in net.state_dict().items()}
    adapting = ModelGenerator(net, universe_standardizer(), adapt=AdaptConfig(steps=8, lr=1e-2))
    adapting.prepare(llvm_target)
    fast, slow = sketches[0], sketches[-1]
    batch = collate([_example(fast, fast.decisions, 1.0, adapting._vector(), net, adapting.profile)])
    with torch.no_grad():
        start = float(adapting.net.loss(batch))
    adapting.observe(fast, fast.decisions, 1e-4)
    adapting.observe(slow, slow.decisions, None)  # failed: ignored
    proposals = adapting.generate(sketches, 4, np.random.default_rng(0))
    assert len(proposals) == 4 and len(adapting.measured) == 1
    with torch.no_grad():
        assert float(adapting.net.loss(batch)) < 0.75 * start
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())
    plain = ModelGenerator(net, universe_standardizer())
    plain.observe(fast, fast.decisions, 1e-4)
    assert plain.measured == [] and plain.net is net


def test_expert_choice_samples_with_the_mix_its_fastest_measurements_favour(task_spaces):
    """ExpertChoice: after measurements, the task's round samples with the candidate mix (router,
    base, each expert alone) under which its fastest schedules are likeliest; here expert 1's own
    greedy schedule, measured fastest, makes expert 1 the choice and the round expert 1's."""
    from tvm_tensorgpt.generators.model import ExpertChoice, ModelGenerator
    from tvm_tensorgpt.hardware import universe_standardizer
    from tvm_tensorgpt.model import SamplingConfig, legal_token_probabilities, sample_decisions
    from tvm_tensorgpt.workloads.features import workload_features

    _, _, sketches = task_spaces["matmul-128"]
    sketch = sketches[0]
    greedy = SamplingConfig(temperature=0)
    generator = ModelGenerator(expert_net(), universe_standardizer(), sampling=greedy, choice=ExpertChoice(top=2))
    generator.prepare(tvm.target.Target(get_profile("intel-xeon-avx2-2c").target))
    generator.base_only = False  # the target may resolve to this machine, far from the Intel experts
    net, config, vector = generator.net, generator.net.config, generator._vector()
    workload = torch.tensor(workload_features(sketch.mod))
    tokens = config.hardware_tokens(generator.profile)
    expert = torch.eye(len(config.experts))[1:2]
    fast = sample_decisions(net, [sketch], tokens, vector[None], torch.Generator().manual_seed(0), greedy,
                            generator.device, workload[None], expert)[0]  # fmt: skip
    routed = generator.generate([sketch], 2, np.random.default_rng(0))
    assert generator.choices == [] and routed != [type(routed[0])(0, fast)] * 2
    generator.observe(sketch, fast, 1e-4)
    generator.observe(sketch, sketch.decisions, 3e-4)  # slower: a third of the weight
    unknown = [(1 << 20,) * len(d) if isinstance(d, tuple) else d for d in fast]  # no token for these tiles
    generator.observe(sketch, unknown, 1e-5)  # the fastest, but not in the language: not scored
    chosen = generator.generate([sketch], 2, np.random.default_rng(0))
    assert generator.choices == [config.experts[1]]
    assert [p.decisions for p in chosen] == [fast, fast]  # greedy under expert 1 alone
    assert generator.describe().endswith(f"(choosing experts by the top 2 measurements: {config.experts[1]} x1)")
    # the scores it chose by: the router's row of a batched call is the unbatched call's
    mixes = torch.cat([net.gates(vector[None], workload[None], 1), expert])
    batched, counts = legal_token_probabilities(net, sketch, fast, tokens, vector, generator.device, workload, mixes)
    single, _ = legal_token_probabilities(net, sketch, fast, tokens, vector, generator.device, workload)
    assert batched.shape == (2, len(counts)) and len(counts) > 0 and np.all(counts > 1)
    assert np.allclose(batched[0], single[0], atol=1e-5) and np.log(batched[1]).sum() > np.log(batched[0]).sum()
    off = ModelGenerator(expert_net(), universe_standardizer())
    off.observe(sketch, fast, 1e-4)
    assert off.measured == [] and off.choices == []


def test_a_device_far_from_every_expert_gets_the_base_model(task_spaces):
    """Jetson Orin is unlike the three host-CPU experts: the router is bypassed (base alone);
    another profile of the experts' machine is close to them and keeps its routed mixture."""
    import tvm

    from tvm_tensorgpt.generators.model import CLOSE_EXPERT, ModelGenerator
    from tvm_tensorgpt.hardware import get_profile, universe_standardizer
    from tvm_tensorgpt.model.generate import SamplingConfig

    _, _, sketches = task_spaces["matmul-128"]
    generator = ModelGenerator(expert_net(), universe_standardizer(), sampling=SamplingConfig(temperature=0))
    generator.prepare(tvm.target.Target(get_profile("jetson-orin").target))
    assert generator.base_only
    far = generator.generate(sketches, 3, np.random.default_rng(0))
    generator.net.router.mlp[-1].bias.data += torch.tensor([5.0, 0.0, 0.0, -5.0])  # route to an expert
    assert generator.generate(sketches, 3, np.random.default_rng(0)) == far  # still the base alone
    generator.base_only = False  # the same device through the router: the experts change the proposals
    assert generator.generate(sketches, 3, np.random.default_rng(0)) != far
    _, cosine = generator.closest_expert(get_profile("intel-xeon-avx2-2c"))  # a target would mean this machine
    assert cosine >= CLOSE_EXPERT


def _orin_matmul():
    target = tvm.target.Target(get_profile("jetson-orin").target)
    load_tensor_intrinsics(target)
    context = make_context(get_workload("matmul-128").build(), target)
    sketches = [Sketch.from_schedule(context.mod, s) for s in context.generate_design_space()]
    generator = PriorGenerator()
    generator.prepare(target)
    return context, sketches, generator.generate(sketches, 4, np.random.default_rng(0))


def test_generated_cuda_schedule_compiles_with_nvcc():
    problem = cuda.nvcc_problem("sm_87")
    if problem:
        pytest.skip(problem)
    context, sketches, proposals = _orin_matmul()
    counts = check_candidates(context, sketches, proposals, compile_limit=1)
    assert counts.generated == 4 and counts.verified >= 1
    assert counts.compile_tried == 1 and counts.compiled == 1 and counts.nvcc is None


def test_without_nvcc_validity_stops_at_verify_gpu_code(monkeypatch):
    monkeypatch.setattr(cuda, "find_nvcc", lambda: None)
    assert "nvcc not found" in cuda.nvcc_problem("sm_87") and "VerifyGPUCode" in cuda.nvcc_problem("sm_87")
    context, sketches, proposals = _orin_matmul()
    counts = check_candidates(context, sketches, proposals, compile_limit=2)
    assert counts.verified >= 1 and counts.compiled is None and counts.compile_tried == 0
    assert "nvcc not found" in counts.nvcc
