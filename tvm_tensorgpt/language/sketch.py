"""Design-space sketches: a MetaSchedule design space seen as a program with decision slots.

A design space (one schedule from a space generator) is a trace whose sampling instructions carry
decisions. ``Sketch.from_schedule`` replays that trace once on the workload to learn, for every
sampling instruction, what a decision there may be (loop extent and tile parts, categorical
candidates, the compute locations TVM accepts). Everything later (prompt, response, legality masks,
applying a generated decision set) works from these slots, so each design space is analysed once.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import tvm
import tvm_ffi
from tvm.ir import IRModule
from tvm.s_tir import Schedule
from tvm.s_tir.schedule import Instruction, InstructionKind, LoopRV, SBlockRV, Trace

from ..tvm_glue import TVM_ERRORS
from .locations import NestShape, scan_rule

logger = logging.getLogger(__name__)

TILE = "tile"
CATEGORICAL = "categorical"
LOCATION = "location"
OPAQUE = "opaque"  # a sampling instruction the language records but leaves to TVM's sampler

Decision = Union[tuple[int, ...], int, None]

_SLOT_KINDS = {
    "SamplePerfectTile": TILE,
    "SampleCategorical": CATEGORICAL,
    "SampleComputeLocation": LOCATION,
}
_PROBE_BEYOND = 1 << 20  # a location index past any loop: TVM snaps it to the deepest legal one
SCAN_CHECKS = 3  # scans of one location structure checked against TVM's probe before it is trusted
_GET_LOOP_ITER_TYPE = tvm_ffi.get_global_func("s_tir.schedule.GetLoopIterType")
_GET_CONSUMERS, _GET_LOOPS, _COMPUTE_INLINE = (InstructionKind.get(k) for k in ("GetConsumers", "GetLoops", "ComputeInline"))


def is_sampling(inst: Instruction) -> bool:
    return inst.kind.name.startswith("Sample")


@dataclass(frozen=True)
class DecisionSlot:
    """What one sampling instruction of a sketch may decide.

    ``choices`` holds the categorical candidate values (decision = their index) or, for compute
    locations, the indices legal in the design space itself (which locations are legal depends on
    earlier tile decisions: ``Sketch.legal_locations`` gives the live set); tiles use ``extent``,
    ``parts`` and ``max_innermost`` (0 = no limit).
    """

    kind: str
    inst_kind: str
    extent: int | None = None
    parts: int = 1
    max_innermost: int = 0
    choices: tuple[int, ...] = ()

    @property
    def num_tokens(self) -> int:
        return self.parts if self.kind in (TILE, OPAQUE) else 1


@dataclass(frozen=True)
class BlockInfo:
    """A block of the workload as the prompt describes it."""

    name: str
    iters: tuple[tuple[str, int], ...]  # (kind "S"/"R"/"O", extent; -1 when not constant)
    dtypes: tuple[str, ...]


@dataclass
class Sketch:
    """One design space of one workload, with its decision slots.

    ``decisions`` are the design space's own (sampled) decisions, one per slot.
    """

    mod: IRModule
    trace: Trace
    slots: list[DecisionSlot]
    decisions: list[Decision]
    blocks: list[BlockInfo]
    # per instruction: (kind, annotation key or (), indices of the random variables it reads)
    instructions: list[tuple[str, tuple[Any, ...], tuple[int, ...]]] = field(default_factory=list)
    # the block each location slot places, by name (names survive a replay, random variables do not)
    location_blocks: dict[int, str] = field(default_factory=dict)
    # per slot and consumer nest (see ``legal_locations``): how many probes the scan has matched so
    # far, -1 once one disagreed (that nest is always probed)
    _scan_checks: dict[tuple, int] = field(default_factory=dict, repr=False, compare=False)
    # per location structure without a replay (slot, earlier location decisions): its loops' extents
    _shapes: dict[tuple, NestShape] = field(default_factory=dict, repr=False, compare=False)
    _sampling: list[Instruction] = field(init=False, repr=False)  # the slots' instructions, in order
    _positions: list[int] = field(init=False, repr=False)  # where each slot's instruction is in the trace
    # the unscheduled workload: copying it is far cheaper than making a Schedule of ``mod`` (``blank``)
    _schedule: Schedule = field(init=False, repr=False, compare=False)
    _insts: list[Instruction] = field(init=False, repr=False)
    # per location slot: positions of the instructions that read the loop it samples (None: one
    # samples from it, and no module trace is made)
    _readers: dict[int, list[int] | None] = field(init=False, repr=False)
    # per location structure (slot, earlier location decisions): how many consumers the block has
    # and how many loops the first one sits in (what a module trace's GetConsumers/GetLoops return)
    _counts: dict[tuple, tuple[int, int]] = field(default_factory=dict, repr=False, compare=False)
    _annotations: tuple = field(init=False, repr=False)  # see ``annotations``

    def __post_init__(self) -> None:
        self._schedule = Schedule(self.mod, seed=1, debug_mask="none", error_render_level="none")
        self._insts = list(self.trace.insts)
        self._annotations = _constant_annotations(self._insts)
        self._positions = [i for i, inst in enumerate(self._insts) if is_sampling(inst)]
        self._sampling = [self._insts[i] for i in self._positions]
        self._readers = {}
        for slot, position in enumerate(self._positions):
            if self.slots[slot].kind == LOCATION:
                loop = self._insts[position].outputs[0]
                readers = [i for i in range(position + 1, len(self._insts))
                           if any(loop.same_as(rv) for rv in self._insts[i].inputs)]  # fmt: skip
                # a sampling reader would lose its decision (decisions are keyed by instruction)
                self._readers[slot] = None if any(is_sampling(self._insts[i]) for i in readers) else readers

    @classmethod
    def from_schedule(cls, mod: IRModule, design_space: Schedule) -> Sketch:
        """Analyse a design space by replaying its trace on ``mod``."""
        trace = design_space.trace
        sch = Schedule(mod, debug_mask="none", error_render_level="none")
        slots: list[DecisionSlot] = []
        decisions: list[Decision] = []
        location_blocks: dict[int, str] = {}

        def record(inst: Instruction, inputs: list, attrs: list, decision: Any) -> Any:
            name = inst.kind.name
            if not is_sampling(inst):
                return decision
            slot, value = _analyse(sch, name, inputs, attrs, decision)
            if slot.kind == LOCATION:
                location_blocks[len(slots)] = sch.get(inputs[0]).name_hint
            slots.append(slot)
            decisions.append(value)
            return decision

        trace.apply_to_schedule(sch, remove_postproc=True, decision_provider=record)
        return cls(
            mod=mod,
            trace=trace,
            slots=slots,
            decisions=decisions,
            blocks=describe_blocks(mod),
            instructions=instruction_structure(trace),
            location_blocks=location_blocks,
        )

    def read_decisions(self, trace: Trace) -> list[Decision]:
        """The decisions of another trace of this sketch (e.g. a tuning record), slot by slot."""
        sampling = [inst for inst in trace.insts if is_sampling(inst)]
        if len(sampling) != len(self.slots):
            raise ValueError(
                f"trace has {len(sampling)} sampling instructions, the sketch has "
                f"{len(self.slots)}: it was not made from this design space"
            )
        out: list[Decision] = []
        for inst, slot in zip(sampling, self.slots):
            if inst.kind.name != slot.inst_kind:
                raise ValueError(f"trace samples {inst.kind.name} where the sketch has {slot.inst_kind}")
            out.append(_plain_decision(slot.kind, trace.decisions.get(inst)))
        return out

    def annotations(self, trace: Trace) -> tuple | None:
        """What another trace of this sketch sets that its decisions do not say: its constant
        annotation values (``MutateParallel`` rewrites the parallel extent), None where they are the
        sketch's own. With the decisions, it tells two traces' modules apart. Only the sketch's
        part of the trace counts: postprocessors append annotations made from the decisions."""
        values = _constant_annotations(list(trace.insts)[: len(self._insts)])
        return None if values == self._annotations else values

    def legal_locations(self, decided: Sequence[Decision]) -> tuple[int, ...]:
        """Legal compute locations of slot ``len(decided)`` given the decisions before it.

        TVM skips loops of extent 1, so the set depends on earlier tile sizes: the sketch is
        replayed up to that instruction (one call into TVM) and the set read off the live schedule.
        TVM's probe tries a compute-at on every candidate loop, most of a sampled candidate's cost,
        so ``scan_rule`` applies TVM's rule to the loops (``_nest_loops``) without those trials; for
        each slot and consumer nest (the consumers and their loop counts, whatever the earlier
        locations: a softmax sketch has hundreds of those combinations, each probed until trusted
        when they were part of the key) the probe is still run until ``SCAN_CHECKS`` scans in a
        row agreed with it, and forever once one did not. The replay
        itself is skipped once the structure's ``NestShape`` (where each loop's extent comes from)
        predicted ``SHAPE_CHECKS`` replays right.
        """
        target = len(decided)
        if self.slots[target].kind != LOCATION:
            raise ValueError(f"slot {target} is a {self.slots[target].kind} slot, not a location")
        known = self.known_locations(decided)
        if known is not None:
            return known
        placed = self._placed(target, decided)
        sch = self.replay_to(target, decided)
        block, consumers, nests = self._consumer_nests(sch, target, placed)
        structure = (target, tuple((sch.get(c).name_hint, len(n)) for c, n in zip(consumers, nests)))
        checks = self._scan_checks.get(structure, 0)
        inline = -2 in self.slots[target].choices  # structural: as in the design space
        kinds, extents = _nest_loops(sch, nests)
        scanned = scan_rule(kinds, [e == 1 for e in extents], inline) if checks >= 0 else None
        if scanned is not None and checks >= SCAN_CHECKS:
            legal = scanned
        else:
            legal = _legal_locations(sch, block, inline)
            if scanned is not None:
                self._scan_checks[structure] = checks + 1 if scanned == legal else -1
        self._shapes.setdefault(placed, NestShape()).learn(decided, kinds, extents, inline, legal)
        return legal

    def known_locations(self, decided: Sequence[Decision]) -> tuple[int, ...] | None:
        """``legal_locations(decided)`` where the location structure is learned well enough to
        tell it without a replay (``NestShape``), else None."""
        shape = self._shapes.get(self._placed(len(decided), decided))
        return None if shape is None else shape.predict(decided)

    def blank(self, seed: int = 1) -> Schedule:
        """A fresh schedule of the unscheduled workload, seeded (a copy of one made once)."""
        sch = self._schedule.copy()
        sch.seed(seed)
        return sch

    def replay_to(self, slot: int, decided: Sequence[Decision]) -> Schedule:
        """The sketch replayed with ``decided`` up to (not including) slot ``slot``'s instruction,
        in one call into TVM (a module trace where it can be: only the module matters here).
        Raises one of ``TVM_ERRORS`` when the decisions cannot be applied."""
        sch = self.blank()
        self._trace(decided, slot, exact=False)[0].apply_to_schedule(sch, remove_postproc=True)
        return sch

    def apply(self, decisions: Sequence[Decision], seed: int = 1, exact: bool = True) -> Schedule:
        """Replay the sketch with ``decisions`` (None = let TVM sample) on a fresh schedule.

        Postprocessing instructions are dropped; the caller runs the postprocessors. Raises
        one of ``TVM_ERRORS`` when the decisions cannot be applied.

        ``exact=False`` replays a *module trace* where it can: each compute-location sample is
        replaced by fetching the loop it chose (GetConsumers, GetLoops). The module is the same,
        2.5x faster over the held-out tasks' sketches (``benchmarks/location_scan.py``): TVM's
        sampler tries a compute-at on every candidate loop at every replay, decision given or not. Its trace is not the sketch's
        (mutators and ``read_decisions`` need the sample instructions), so it is for a pool,
        where only the module counts (hash, features, postprocessors); what is measured and
        stored is applied exactly.
        """
        return self._apply(decisions, seed, exact)[0]

    def _apply(self, decisions: Sequence[Decision], seed: int, exact: bool) -> tuple[Schedule, bool]:
        """``apply``, and whether the replay was exact (a module trace cannot always be made)."""
        if len(decisions) != len(self.slots):
            raise ValueError(f"{len(decisions)} decisions for {len(self.slots)} slots")
        sch = self.blank(seed)
        trace, exact = self._trace(decisions, len(self.slots), exact)
        # one call into TVM, no Python callback per instruction: replays in threads run in parallel
        trace.apply_to_schedule(sch, remove_postproc=True)
        return sch, exact

    def _trace(self, decisions: Sequence[Decision], slot: int, exact: bool) -> tuple[Trace, bool]:
        """The sketch's trace up to slot ``slot``'s instruction (all of it at ``len(slots)``)
        with ``decisions``, and whether it is the exact one: a module trace (see ``apply``) unless
        ``exact`` or it cannot be made (a location left to TVM, its loop read by more than a
        compute-at)."""
        end = self._positions[slot] if slot < len(self.slots) else len(self._insts)
        chosen = {inst: list(value) if isinstance(value, tuple) else value
                  for inst, value in zip(self._sampling[:slot], decisions) if value is not None}  # fmt: skip
        insts = None if exact else self._module_insts(decisions, slot, end)
        return Trace(self._insts[:end] if insts is None else insts, chosen), insts is None

    def module_trace(self, trace: Trace, decisions: Sequence[Decision]) -> Trace | None:
        """A module trace (see ``apply``) of ``trace``, another trace of this sketch whose
        decisions are ``decisions`` (a measured schedule's, or a mutation of one: the sketch's
        instructions, with its own annotations), or None where none can be made (instructions
        that are not the sketch's, a location left open)."""
        insts = list(trace.insts)
        kinds = [inst.kind.name for inst in insts]
        insts = insts[: kinds.index("EnterPostproc")] if "EnterPostproc" in kinds else insts
        if len(insts) != len(self._insts) or any(a.kind.name != b.kind.name for a, b in zip(insts, self._insts)):
            return None
        try:  # a mutated location can make an earlier compute-at illegal: the exact replay says so
            module = self._module_insts(decisions, len(self.slots), len(insts), insts)
        except TVM_ERRORS:
            return None
        if module is None:
            return None
        chosen = {insts[p]: trace.decisions[insts[p]] for p in self._positions if insts[p] in trace.decisions}
        return Trace(module, chosen)

    def _module_insts(self, decisions: Sequence[Decision], slot: int, end: int,
                      base: list[Instruction] | None = None) -> list[Instruction] | None:  # fmt: skip
        """The instructions of a module trace up to position ``end`` (see ``apply``), or None;
        ``base``: the instructions of another trace of this sketch (default: the sketch's)."""
        base = self._insts if base is None else base
        locations = [s for s in self._readers if s < slot]
        if not locations:
            return base[:end]
        if any(decisions[s] is None or self._readers[s] is None for s in locations):
            return None
        insts: list[Any] = list(base[:end])
        for s in locations:
            position, decision = self._positions[s], int(decisions[s])  # type: ignore[arg-type]
            block, readers = insts[position].inputs[0], [r for r in self._readers[s] or () if r < end]
            if decision >= 0:
                consumers, loops = self._location_counts(s, decisions)
                if decision >= loops or not consumers:
                    return None
                consumer_rvs, loop_rvs = [SBlockRV() for _ in range(consumers)], [LoopRV() for _ in range(loops)]
                insts[position] = [Instruction(_GET_CONSUMERS, [block], [], consumer_rvs),
                                   Instruction(_GET_LOOPS, [consumer_rvs[0]], [], loop_rvs)]  # fmt: skip
                sampled, chosen = base[position].outputs[0], loop_rvs[decision]
                for r in readers:
                    inst = base[r]
                    inputs = [chosen if sampled.same_as(rv) else rv for rv in inst.inputs]
                    insts[r] = Instruction(inst.kind, inputs, list(inst.attrs), list(inst.outputs))
                continue
            # root (-1) or inline (-2): a compute-at there does nothing or inlines; any other reader
            # of the sampled loop cannot be written without it
            if any(base[r].kind.name != "ComputeAt" for r in readers):
                return None
            insts[position] = []
            for r in readers:
                insts[r] = Instruction(_COMPUTE_INLINE, [block], [], []) if decision == -2 else []
        return [i for item in insts for i in (item if isinstance(item, list) else [item])]

    def _placed(self, slot: int, decided: Sequence[Decision]) -> tuple:
        """Location slot ``slot`` and the locations decided before it: what fixes the loops around it."""
        return slot, tuple(d for d, s in zip(decided[:slot], self.slots) if s.kind == LOCATION)

    def _location_counts(self, slot: int, decided: Sequence[Decision]) -> tuple[int, int]:
        """Consumers of location slot ``slot``'s block and loops of the first one (recorded by
        ``legal_locations``, else read off a replay of the prefix once per location structure)."""
        placed = self._placed(slot, decided)
        if placed not in self._counts:
            self._consumer_nests(self.replay_to(slot, decided), slot, placed)
        return self._counts[placed]

    def _consumer_nests(self, sch: Schedule, slot: int, placed: tuple) -> tuple[SBlockRV, list, list]:
        """Location slot ``slot``'s block on ``sch`` (replayed up to it), its consumers and their
        loops; records the counts ``_location_counts`` gives for the structure ``placed``."""
        block = sch.get_sblock(self.location_blocks[slot])
        consumers = sch.get_consumers(block)
        nests = [sch.get_loops(c) for c in consumers]
        self._counts[placed] = (len(consumers), len(nests[0]) if nests else 0)
        return block, consumers, nests

    def realise(self, decisions: Sequence[Decision], postprocs: Sequence[Any], seed: int = 1,
                exact: bool = True) -> Realised:  # fmt: skip
        """Apply ``decisions`` (``exact``: see ``apply``), then run ``postprocs`` in order as
        MetaSchedule does.

        The one way a decision set becomes a candidate: the search strategy, the CUDA validity
        check and the validity labels all go through it. Never raises for a schedule TVM rejects.
        """
        try:
            sch, exact = self._apply(decisions, seed, exact)
        except TVM_ERRORS:
            return Realised(None, 0, False)
        sch.enter_postproc()
        passed = 0
        try:
            for postproc in postprocs:
                if not postproc.apply(sch):
                    break
                passed += 1
        except TVM_ERRORS:
            pass
        return Realised(sch, passed, passed == len(postprocs), exact)


@dataclass(frozen=True)
class Realised:
    """How far a decision set got: applied (``schedule`` not None), through ``passed``
    postprocessors, ``valid`` when every one accepted it; ``exact`` unless its schedule was made
    from a module trace (``Sketch.apply``)."""

    schedule: Schedule | None
    passed: int
    valid: bool
    exact: bool = True


def _analyse(
    sch: Schedule, name: str, inputs: list, attrs: list, decision: Any
) -> tuple[DecisionSlot, Decision]:
    kind = _SLOT_KINDS.get(name)
    if kind == TILE:
        extent = sch.get(inputs[0]).extent
        value = int(extent) if isinstance(extent, tvm.tirx.IntImm) else None
        slot = DecisionSlot(TILE, name, value, int(attrs[0]), max(int(attrs[1]), 0))
    elif kind == CATEGORICAL:
        slot = DecisionSlot(CATEGORICAL, name, choices=tuple(int(c) for c in attrs[0]))
    elif kind == LOCATION:
        slot = DecisionSlot(LOCATION, name, choices=_legal_locations(sch, inputs[0], None))
    else:
        logger.info("sampling instruction %s is not modelled; TVM samples it", name)
        parts = len(decision) if isinstance(decision, (list, tuple, tvm.ir.Array)) else 1
        slot = DecisionSlot(OPAQUE, name, parts=parts)
    return slot, _plain_decision(slot.kind, decision)


def _legal_locations(sch: Schedule, block: Any, inline: bool | None) -> tuple[int, ...]:
    """Compute locations TVM accepts for ``block`` now.

    TVM's rule (CollectComputeLocation): root (-1) always, inline (-2) when the block can be
    inlined, and every loop of the first consumer down to the deepest legal one except loops of
    extent 1. TVM snaps an illegal location to the deepest legal one above it, so one probe past
    the last loop finds the deepest; inline legality is structural, so ``inline`` (known from the
    design space) saves its probe. TVM's probe tries a compute-at per candidate loop:
    ``scan_rule`` gives the same set without those trials. Checked against probing
    every index in tests.
    """

    def probe(index: int) -> int:
        trial = sch.copy()
        trial.sample_compute_location(block, decision=index)
        return int(trial.trace.decisions[trial.trace.insts[-1]])

    if inline is None:
        inline = probe(-2) == -2
    deepest = probe(_PROBE_BEYOND)
    consumers = sch.get_consumers(block)
    loops = sch.get_loops(consumers[0]) if len(consumers) else []
    inner = [i for i in range(min(deepest + 1, len(loops))) if not _is_one(sch.get(loops[i]).extent)]
    return tuple(([-2] if inline else []) + [-1] + inner)


def _nest_loops(sch: Schedule, nests: Sequence[Sequence[Any]]) -> tuple[tuple[str, ...], tuple[int | None, ...]]:
    """The iteration kind and constant extent (None: not a constant) of each loop of the first
    consumer down to the consumers' lowest common loop: the candidates of TVM's rule."""
    if not nests:
        return (), ()
    fors = [[sch.get(rv) for rv in nest] for nest in nests]
    common = len(fors[0])  # loops every consumer sits in (TVM's boundary: the lowest common ancestor)
    for nest in fors[1:]:
        common = next((i for i, (a, b) in enumerate(zip(nest, fors[0][:common])) if not a.same_as(b)),
                      min(common, len(nest)))  # fmt: skip
    loops = list(zip(nests[0], fors[0]))[:common]
    kinds = tuple(str(_GET_LOOP_ITER_TYPE(sch, rv)) for rv, _ in loops)
    extents = tuple(int(loop.extent) if isinstance(loop.extent, tvm.tirx.IntImm) else None for _, loop in loops)
    return kinds, extents


def _is_one(extent: Any) -> bool:
    return isinstance(extent, tvm.tirx.IntImm) and int(extent) == 1


def _constant_annotations(insts: Sequence[Instruction]) -> tuple[tuple[str, int], ...]:
    """(key, value) of each Annotate instruction whose value is a constant, not a sampled variable."""
    return tuple((str(inst.attrs[0]), int(inst.inputs[1])) for inst in insts
                 if inst.kind.name == "Annotate" and isinstance(inst.inputs[1], (int, tvm.tirx.IntImm)))  # fmt: skip


def _plain_decision(kind: str, decision: Any) -> Decision:
    if decision is None:
        return None
    if kind in (TILE, OPAQUE) and isinstance(decision, (list, tuple, tvm.ir.Array)):
        return tuple(int(v) for v in decision)
    return int(decision)


def instruction_structure(trace: Trace) -> list[tuple[str, tuple[Any, ...], tuple[int, ...]]]:
    """(kind, annotation key, variables read) per instruction before postprocessing.

    Variables are numbered in order of definition (as TVM prints b0, b1, l2, ...). Two traces with
    the same structure are the same design space with possibly different decisions.
    """
    out = []
    defined: dict[Any, int] = {}
    for inst in trace.insts:
        name = inst.kind.name
        if name == "EnterPostproc":
            break
        reads = tuple(defined[rv] for rv in inst.inputs if _is_rv(rv) and rv in defined)
        for rv in inst.outputs:
            defined[rv] = len(defined)
        out.append((name, _plain_attrs(name, list(inst.attrs)), reads))
    return out


def _is_rv(value: Any) -> bool:
    return isinstance(value, (tvm.s_tir.schedule.SBlockRV, tvm.s_tir.schedule.LoopRV, tvm.tirx.Var))


def _plain_attrs(name: str, attrs: list) -> tuple[Any, ...]:
    """The attributes the prompt shows: annotation keys only (others are structure or numbers)."""
    if name in ("Annotate", "Unannotate") and attrs:
        return (str(attrs[0]),)
    return ()


_ITER_KIND = {0: "S", 2: "R"}


def describe_blocks(mod: IRModule) -> list[BlockInfo]:
    """Blocks of the workload's entry function (names, iterator kinds and extents, output dtypes)."""
    sch = Schedule(mod, debug_mask="none", error_render_level="none")
    func_name = _entry_name(mod)
    root = sch.get_sblock("root", func_name=func_name)
    out = []
    for rv in sch.get_child_blocks(root):
        block = sch.get(rv)
        iters = tuple(
            (
                _ITER_KIND.get(int(iv.iter_type), "O"),
                int(iv.dom.extent) if isinstance(iv.dom.extent, tvm.tirx.IntImm) else -1,
            )
            for iv in block.iter_vars
        )
        dtypes = tuple(str(w.source.dtype) for w in block.writes)
        out.append(BlockInfo(block.name_hint, iters, dtypes))
    return out


def _entry_name(mod: IRModule) -> str:
    names = [gv.name_hint for gv in mod.get_global_vars()]
    return "main" if "main" in names else names[0]
