"""The evidence for PipelineFilter (docs/language.md): masked-prior CUDA candidates of the
pipelined sketches of the first 10 held-out subgraphs on Jetson Orin, shared memory unlimited,
counted by (sketch, reduction-outer tile product capped at 5, passes the CUDA postprocessors).

    python benchmarks/one_off/pipeline_check.py
"""

import collections
import math

import numpy as np
import tvm

from tvm_tensorgpt.data.split import heldout_tasks
from tvm_tensorgpt.generators import PriorGenerator
from tvm_tensorgpt.hardware import get_profile
from tvm_tensorgpt.language import design_context
from tvm_tensorgpt.language.limits import SharedMemoryFilter, ThreadLimitFilter

data = dict(get_profile("jetson-orin").target)
target = tvm.target.Target({**data, "max_shared_memory_per_block": 1 << 30})
rng = np.random.default_rng(0)
stat: collections.Counter = collections.Counter()
for task in heldout_tasks()[:10]:
    context, sketches = design_context(task.mod, target)
    postprocs = list(context.space_generator.postprocs)
    generator = PriorGenerator(filters=[ThreadLimitFilter(1024), SharedMemoryFilter(1 << 30)], device_limits=False)
    for proposal in generator.generate(sketches, 30, rng):
        if proposal.sketch_index == 0:  # the sketch without a software pipeline
            continue
        sketch = sketches[proposal.sketch_index]
        sch = sketch.apply(proposal.decisions)
        decisions = sketch.read_decisions(sch.trace)
        outer = math.prod(d[0] for d, s in zip(decisions, sketch.slots) if isinstance(d, tuple) and s.parts == 3)
        stat[(proposal.sketch_index, min(outer, 5), all(p.apply(sch) for p in postprocs))] += 1
for key, count in sorted(stat.items()):
    print(key, count)
