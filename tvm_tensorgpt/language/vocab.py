"""The deterministic vocabulary of the schedule language.

Every token comes from a fixed, ordered list in this file, so token ids never depend on the data a
model was trained on: a checkpoint and the language agree as long as ``VOCAB_VERSION`` and the size
match. Anything outside the lists maps to an explicit unknown token (``<unk>`` for words and
instructions, ``<unk_num>`` for numbers) instead of failing. docs/language.md describes each group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property

from ..hardware.profile import BUCKETS

VOCAB_VERSION = 2

SPECIAL = ["<pad>", "<bos>", "<eos>", "<sep>", "<unk>", "<unk_num>", "<mask>"]

# Section markers of a prompt: hardware, workload (blocks, iterators, dtypes), sketch.
MARKERS = ["[HW]", "[WL]", "[BLK]", "[IT]", "[DT]", "[SK]", "[TGT]"]

# Coarse hardware families (the seed's bucket tokens); the hardware module picks one per device.
HW_BUCKETS = [*BUCKETS, "HW_UNKNOWN"]

# Iterator kinds of a block: data-parallel (spatial), reduction, anything else.
ITER_KINDS = ["S", "R", "O"]

DTYPES = [
    "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "float8_e4m3fn", "float8_e5m2", "float16", "bfloat16", "float32", "float64",
]  # fmt: skip

# TensorIR schedule instruction kinds (tvm.s_tir.schedule) as they appear in MetaSchedule traces.
INSTRUCTIONS = [
    "GetSBlock", "GetLoops", "GetChildBlocks", "GetProducers", "GetConsumers",
    "GetOutputBlocks", "Fuse", "Split", "LoopPartition", "Merge", "Reorder",
    "ReorderBlockIterVar", "AddUnitLoop", "Parallel", "Vectorize", "Bind", "Unroll",
    "CacheRead", "CacheWrite", "ReindexCacheRead", "ReindexCacheWrite", "CacheInplace",
    "CacheIndex", "ReIndex", "ComputeAt", "ReverseComputeAt", "ComputeInline",
    "ReverseComputeInline", "DecomposeReduction", "RFactor", "StorageAlign", "SetScope",
    "SetAxisSeparator", "Blockize", "Tensorize", "Annotate", "Unannotate", "TransformLayout",
    "TransformBlockLayout", "DecomposePadding", "PadEinsum", "RollingBuffer",
    "AnnotateBufferAccess", "UnsafeHideBufferAccess", "UnsafeSetDType", "EnterPostproc",
    "SampleCategorical", "SamplePerfectTile", "SamplePartitionedTile", "SampleComputeLocation",
]  # fmt: skip

# Annotation keys MetaSchedule's rules write (llvm and cuda).
ANNOTATIONS = [
    "meta_schedule.tiling_structure", "meta_schedule.parallel", "meta_schedule.vectorize",
    "meta_schedule.unroll_explicit", "meta_schedule.unroll_implicit",
    "meta_schedule.cooperative_fetch", "meta_schedule.thread_extent_low_inclusive",
    "meta_schedule.thread_extent_high_inclusive", "meta_schedule.random_compute_producer",
    "meta_schedule.auto_tensorize", "meta_schedule.auto_tensorize_init",
    "meta_schedule.layout_rewrite_preproc", "meta_schedule.inline_rule",
    "software_pipeline_stage", "software_pipeline_order", "software_pipeline_async_stages",
    "warp_execution", "pragma_auto_unroll_max_step", "pragma_unroll_explicit",
]  # fmt: skip

# Sub-words of block and operator names (names are split on "_" and case changes).
WORDS = [
    "t", "root", "compute", "matmul", "nn", "nt", "tn", "tt", "dense", "batch", "conv1d",
    "conv2d", "conv3d", "nchw", "nhwc", "ncdhw", "ndhwc", "oihw", "hwio", "depthwise",
    "group", "winograd", "transpose", "pad", "temp", "add", "subtract", "multiply", "divide",
    "relu", "sigmoid", "tanh", "gelu", "erf", "exp", "log", "sqrt", "rsqrt", "power", "clip",
    "maximum", "minimum", "softmax", "maxelem", "expsum", "norm", "layer", "mean",
    "sum", "max", "min", "variance", "pool", "avg", "adaptive", "global", "cast", "reshape",
    "broadcast", "where", "take", "concatenate", "split", "strided", "slice", "squeeze",
    "expand", "dims", "red", "rf", "cache", "shared", "local", "data", "weight", "bias",
    "input", "output", "placeholder", "a", "b", "c", "x", "w", "y", "fused", "reduce",
]  # fmt: skip

# Target-string words (the TLM-style hardware description): target attributes and their values.
TARGET_KEYS = ["kind", "mcpu", "mattr", "num-cores", "arch", "max_threads_per_block",
               "max_shared_memory_per_block", "thread_warp_size", "registers_per_block", "mtriple"]  # fmt: skip
TARGET_VALUES = [
    "llvm", "cuda", "rocm", "metal", "c",
    "nehalem", "westmere", "x86-64-v2", "sandybridge", "ivybridge", "haswell", "core-avx2", "broadwell",
    "skylake", "x86-64-v3", "skylake-avx512", "cascadelake", "cooperlake", "icelake-server",
    "sapphirerapids", "x86-64-v4", "rocketlake", "tigerlake", "alderlake", "znver1", "znver2", "znver3",
    "znver4", "znver5", "carmel", "cortex-a72", "cortex-a76", "cortex-a78", "neoverse-n1", "neoverse-v1",
    "apple-m1", "+avx2", "-avx2", "+avx512f", "-avx512f", "+fma", "+neon", "+sve",
    "sm_50", "sm_60", "sm_61", "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87", "sm_89", "sm_90",
]  # fmt: skip

MAX_CATEGORICAL = 64  # categorical decisions are indices C0..C63
MIN_LOCATION, MAX_LOCATION = -2, 127  # compute-location decisions (-2 inline, -1 root)
SMALL_NUMBER_LIMIT = 1024  # every integer 0..1024 is a token
SMOOTH_NUMBER_LIMIT = 1 << 20  # plus every 7-smooth integer up to 2^20 (tile extents are smooth)


def _numbers() -> list[int]:
    """0..1024 plus the 7-smooth integers up to 2^20, sorted."""
    values = set(range(SMALL_NUMBER_LIMIT + 1))
    smooth = [1]
    for prime in (2, 3, 5, 7):
        smooth = [
            n * prime**k
            for n in smooth
            for k in range(21)
            if n * prime**k <= SMOOTH_NUMBER_LIMIT
        ]
    values.update(smooth)
    return sorted(values)


def split_name(name: str) -> list[str]:
    """Split an identifier like ``T_softmax_maxelem`` or ``conv2dNCHW`` into lower-case words."""
    parts = re.split(r"[^0-9A-Za-z]+|(?<=[a-z])(?=[A-Z])", name)
    words = []
    for part in parts:
        if not part:
            continue
        # keep "conv2d" whole, drop pure numeric suffixes such as the "1" of "compute_1"
        if part.isdigit():
            continue
        words.append(part.lower())
    return words


@dataclass(frozen=True)
class Vocabulary:
    """Token <-> id mapping. Construct with ``Vocabulary()``; it is identical every time."""

    extra: tuple[str, ...] = field(default=())

    @cached_property
    def tokens(self) -> list[str]:
        tokens = list(SPECIAL) + list(MARKERS) + list(HW_BUCKETS)
        tokens += [f"K_{k}" for k in ITER_KINDS]
        tokens += [f"D_{d}" for d in DTYPES]
        tokens += [f"I_{i}" for i in INSTRUCTIONS]
        tokens += [f"A_{a}" for a in ANNOTATIONS]
        tokens += [f"W_{w}" for w in WORDS]
        tokens += [f"TK_{k}" for k in TARGET_KEYS] + [f"TV_{v}" for v in TARGET_VALUES]
        tokens += [f"C{i}" for i in range(MAX_CATEGORICAL)]
        tokens += [f"L{i}" for i in range(MIN_LOCATION, MAX_LOCATION + 1)]
        tokens += [f"N{n}" for n in _numbers()]
        tokens += list(self.extra)
        if len(set(tokens)) != len(tokens):
            raise ValueError("duplicate tokens in the vocabulary definition")
        return tokens

    @cached_property
    def ids(self) -> dict[str, int]:
        return {tok: i for i, tok in enumerate(self.tokens)}

    def __len__(self) -> int:
        return len(self.tokens)

    def id(self, token: str) -> int:
        """Id of a token; unknown numbers map to ``<unk_num>``, anything else to ``<unk>``."""
        found = self.ids.get(token)
        if found is not None:
            return found
        return self.ids["<unk_num>" if token.startswith("N") else "<unk>"]

    def encode(self, tokens: list[str]) -> list[int]:
        return [self.id(t) for t in tokens]

    def decode(self, ids: list[int]) -> list[str]:
        return [self.tokens[i] for i in ids]

    # Token constructors: the only places that spell token strings, so unknowns are uniform.
    def number(self, value: int) -> str:
        tok = f"N{int(value)}"
        return tok if tok in self.ids else "<unk_num>"

    def has_number(self, value: int) -> bool:
        return f"N{int(value)}" in self.ids

    @staticmethod
    def categorical(index: int) -> str:
        return f"C{index}" if 0 <= index < MAX_CATEGORICAL else "<unk>"

    @staticmethod
    def location(index: int) -> str:
        return f"L{index}" if MIN_LOCATION <= index <= MAX_LOCATION else "<unk>"

    def instruction(self, kind: str) -> str:
        tok = f"I_{kind}"
        return tok if tok in self.ids else "<unk>"

    def annotation(self, key: str) -> str:
        tok = f"A_{key}"
        return tok if tok in self.ids else "<unk>"

    def dtype(self, dtype: str) -> str:
        tok = f"D_{dtype}"
        return tok if tok in self.ids else "<unk>"

    def words(self, name: str) -> list[str]:
        return [f"W_{w}" if f"W_{w}" in self.ids else "<unk>" for w in split_name(name)]

    def bucket(self, bucket: str) -> str:
        return bucket if bucket in HW_BUCKETS else "HW_UNKNOWN"

    def target(self, target: dict) -> list[str]:
        """A JSON target as TLM-style target-string tokens: ``[TGT]`` then key, value(s) per attribute."""
        out = ["[TGT]"]
        for key in TARGET_KEYS:
            if key not in target:
                continue
            out.append(f"TK_{key}")
            values = target[key] if isinstance(target[key], (list, tuple)) else [target[key]]
            for value in values:
                if isinstance(value, int) and not isinstance(value, bool):
                    out.append(self.number(value))
                else:
                    out.append(f"TV_{value}" if f"TV_{value}" in self.ids else "<unk>")
        return out


VOCAB = Vocabulary()
