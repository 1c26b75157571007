"""Which expert a checkpoint's generator finds closest to each device (and whether the device gets
the base model alone): python benchmarks/one_off/closest_expert.py CHECKPOINT PROFILE [PROFILE ...]"""

import sys

import tvm

from tvm_tensorgpt.generators.model import ModelGenerator
from tvm_tensorgpt.hardware import get_profile

generator = ModelGenerator.from_checkpoint(sys.argv[1])
for name in sys.argv[2:]:
    generator.prepare(tvm.target.Target(get_profile(name).target))
    print(name, "base only" if generator.base_only else "routed", generator._closest_expert(generator.profile))
