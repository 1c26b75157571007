"""The checkpoint of every generating method in the benchmark, trained with one recipe.

    python benchmarks/checkpoints.py METHOD [--data-dir data/records] [--out benchmarks/checkpoints]

What each method is (all trained on the same source records, held-out tasks and profile excluded):

- ``tensorgpt``: base (bucket token + KV prefix) → one LoRA expert per source profile → router
  over hardware and workload features. The bundled default is this, trained with ``RECIPE``.
- ``no-routing`` / ``no-wa``: TensorGPT's experts kept, router replaced by uniform gates / by a
  router that sees the hardware only (retrained).
- ``tlm``: a base with the target string's tokens as its hardware prompt, no prefix, no experts.
- ``tlm-ct``: ``tlm`` trained ``ct_epochs`` more on the same data (the data TensorGPT's extra
  stages use), so it sees as much training as TensorGPT.
- ``no-hg``: ``tlm``'s base (no bucket, no prefix) with experts and router as TensorGPT.
- ``tensorgpt-distilled``: ``tensorgpt-base`` trained ``ct_epochs`` more on the same records plus
  the shipped cost model's favourite schedules of every training task on every source profile
  (``DISTILLED``, made by ``tensorgpt data distil``; ``train/distill.py``): what distilling the cost
  model into the generator is worth. A base (no experts): compare it with ``tensorgpt-base``.
- ``tensorgpt-gpu``: TensorGPT's base with one more expert per source GPU, trained on its validity
  labels (data/validity: VerifyGPUCode-verified CUDA candidates, weight 1; no timings), and a router
  over all of them. Not bundled: the validity benchmark compares it with the bundled default.

Every step resumes (the trainer's own resume) and a finished folder is reused as it is.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from common import CHECKPOINTS, RECORDS, ROOT

VALIDITY = ROOT / "data" / "validity"
DISTILLED = ROOT / "data" / "distilled" / "costmodel-top4.jsonl.gz"


@dataclass(frozen=True)
class Recipe:
    base_epochs: int = 3
    expert_epochs: int = 1
    ct_epochs: int = 1
    hidden: int = 256
    layers: int = 4
    limit: int | None = None  # records read per source profile, verified examples per GPU (None: all)
    min_weight: float = 0.05  # records > ~2.1x slower than their task's best (weight^4) are left out
    threads: int = 1


RECIPE = Recipe()
QUICK = Recipe(base_epochs=1, expert_epochs=1, ct_epochs=1, hidden=32, layers=1, limit=24, min_weight=0.0)


@dataclass(frozen=True)
class Method:
    """How one method's checkpoint is trained. What the model is (prompt, grounding, routing) is its
    variant in ``model/config.py``'s ``VARIANTS``; this says only which checkpoint its stage starts
    from, so that a stage several methods share (a base, TensorGPT's experts) is trained once."""

    variant: str
    experts_on: str | None = None  # an experts (and router) stage on this method's checkpoint
    continues: str | None = None  # a base stage trained further from this method's checkpoint
    gpu_experts: bool = False  # also one expert per source GPU, on its validity labels
    distilled: bool = False  # also the cost model's favourites (DISTILLED)


METHODS: dict[str, Method] = {
    "tensorgpt-base": Method("tensorgpt"),
    "tlm": Method("tlm"),
    "tlm-ct": Method("tlm", continues="tlm"),
    "tensorgpt": Method("tensorgpt", experts_on="tensorgpt-base"),
    "tensorgpt-distilled": Method("tensorgpt", continues="tensorgpt-base", distilled=True),
    "tensorgpt-gpu": Method("tensorgpt", experts_on="tensorgpt-base", gpu_experts=True),
    "no-hg": Method("no-hg", experts_on="tlm"),  # its base config is tlm's: the tlm checkpoint serves
    "no-routing": Method("no-routing", experts_on="tensorgpt"),  # TensorGPT's experts, no router
    "no-wa": Method("no-wa", experts_on="tensorgpt"),  # TensorGPT's experts, a new router
}


@lru_cache(maxsize=4)
def _examples(data_dir: str, variant: str, recipe: Recipe) -> dict:
    """Training examples per source profile, prompted as ``variant`` prompts (cached: every method
    with that prompt trains on them)."""
    from tvm_tensorgpt.model.config import variant_config
    from tvm_tensorgpt.train.trainer import load_examples

    return load_examples(data_dir, variant_config(variant), limit=recipe.limit, min_weight=recipe.min_weight)


@lru_cache(maxsize=2)
def _data(data_dir: str, limit: int | None) -> dict:
    """Which records the examples come from (for every checkpoint's training.json): the
    fingerprint covers every record of each profile, ``limit`` says only the first ones were read."""
    from tvm_tensorgpt.train.trainer import training_data

    return training_data(data_dir) | ({"limit_per_profile": limit} if limit else {})


def _gpu_examples(variant: str, limit: int | None) -> dict:
    """The source GPUs' validity labels (data/validity) as examples, at most ``limit`` per GPU
    spread evenly over the tasks (the labels are in task order)."""
    from tvm_tensorgpt.model.config import variant_config
    from tvm_tensorgpt.train.validity import load_validity_examples

    out = load_validity_examples(VALIDITY, variant_config(variant))
    return {name: rows[:: max(1, len(rows) // limit)][:limit] if limit else rows for name, rows in out.items()}


def _distilled(data_dir: str, variant: str, limit: int | None) -> list:
    """The distilled examples of ``data_dir``'s source profiles, at most ``limit`` per profile."""
    from tvm_tensorgpt.data.split import source_profiles
    from tvm_tensorgpt.model.config import variant_config
    from tvm_tensorgpt.train.distill import distilled_examples

    if not DISTILLED.exists():
        raise SystemExit(f"{DISTILLED} is missing: make it with `tensorgpt data distil --out FILE` and gzip it")
    by_profile = distilled_examples(DISTILLED, variant_config(variant), source_profiles(data_dir), limit)
    return [e for rows in by_profile.values() for e in rows]


def _finished(folder: Path, stages: int | bool) -> bool:
    """Base folders: ``stages`` epochs done. Experts folders (``stages`` = whether a router is
    trained): every expert named in its config done, and the router."""
    state = folder / "training.json"
    if not state.exists() or not (folder / "model.safetensors").exists():
        return False
    state = json.loads(state.read_text(encoding="utf-8"))
    if isinstance(stages, bool):
        experts = json.loads((folder / "config.json").read_text(encoding="utf-8"))["model"]["experts"]
        return all(s in state.get("done", []) for s in [*experts, *(["router"] if stages else [])])
    return state.get("epochs_done", 0) >= stages


def build(method: str, root: Path, data_dir: str, recipe: Recipe, sources: dict[str, Path] | None = None) -> Path:
    """Train (or reuse) ``method``'s checkpoint under ``root``; ``sources`` maps methods to existing
    folders used instead (e.g. ``tensorgpt`` → the bundled default)."""
    from tvm_tensorgpt.model.config import variant_config
    from tvm_tensorgpt.train.trainer import TrainConfig, train, train_experts

    sources = sources or {}
    if method in sources:
        return sources[method]
    if method not in METHODS:
        raise ValueError(f"no checkpoint recipe for {method!r}")
    step, folder = METHODS[method], root / method
    model = variant_config(step.variant, hidden=recipe.hidden, layers=recipe.layers)
    if step.experts_on is None:
        config = TrainConfig(epochs=recipe.base_epochs, threads=recipe.threads)
        if step.continues:  # TLM-CT: its own epochs, over the same data shuffled with another seed
            config = dataclasses.replace(config, epochs=recipe.ct_epochs, seed=1)
        if not _finished(folder, config.epochs):
            init = build(step.continues, root, data_dir, recipe, sources) if step.continues else None
            examples = [e for rows in _examples(data_dir, step.variant, recipe).values() for e in rows]
            data = _data(data_dir, recipe.limit)
            if step.distilled:
                examples += _distilled(data_dir, step.variant, recipe.limit)
                from tvm_tensorgpt.train.distill import fingerprint

                data = {**data, "distilled": fingerprint(DISTILLED) | {"file": str(DISTILLED.relative_to(ROOT))}}
            train(examples, folder, model, config, init, data)
    elif not _finished(folder, model.routing == "learned"):
        base_variant = METHODS[step.experts_on].variant  # the experts learn on the prompt their base knows
        by_profile = _examples(data_dir, base_variant, recipe)
        if step.gpu_experts:
            by_profile = {**by_profile, **_gpu_examples(base_variant, recipe.limit)}
        experts = TrainConfig(epochs=recipe.expert_epochs, threads=recipe.threads)
        train_experts(by_profile, build(step.experts_on, root, data_dir, recipe, sources), folder, experts,
                      model.routing, model.workload_aware, _data(data_dir, recipe.limit))  # fmt: skip
    return folder


def checkpoint_for(method: str, root: str | Path, data_dir: str, quick: bool, bundled: bool = True) -> Path:
    """The folder ``method`` tunes with: tiny ones trained on the fly with ``--quick``; otherwise
    the bundled default for ``tensorgpt`` and ``RECIPE`` checkpoints derived from it (``bundled``
    False: ``RECIPE``'s own ``tensorgpt`` under ``root``, e.g. a retrain on grown data)."""
    from tvm_tensorgpt.model.checkpoint import DEFAULT_CHECKPOINT, has_default_checkpoint

    if quick:
        return build(method, Path(root) / "quick", data_dir, QUICK)
    if not has_default_checkpoint():
        raise SystemExit(f"no bundled checkpoint in {DEFAULT_CHECKPOINT}: build it first (docs/model.md)")
    return build(method, Path(root), data_dir, RECIPE, {"tensorgpt": DEFAULT_CHECKPOINT} if bundled else {})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("method", help=" | ".join(METHODS))
    parser.add_argument("--data-dir", default=str(RECORDS))
    parser.add_argument("--out", default=str(CHECKPOINTS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None,
                        help="records read per source profile (and verified examples per GPU); default all")
    parser.add_argument("--base-epochs", type=int, default=RECIPE.base_epochs,
                        help="epochs of a base stage (a shorter recipe for a quick look; training.json records it)")
    parser.add_argument("--from-bundled", action="store_true",
                        help="derive the ablations from the bundled default instead of training tensorgpt")
    args = parser.parse_args()
    recipe = Recipe(threads=args.threads, limit=args.limit, base_epochs=args.base_epochs)
    sources = {}
    if args.from_bundled:
        from tvm_tensorgpt.model.checkpoint import DEFAULT_CHECKPOINT

        sources["tensorgpt"] = DEFAULT_CHECKPOINT
    print(build(args.method, Path(args.out), args.data_dir, recipe, sources))


if __name__ == "__main__":
    main()
