"""The cost model: ``cost_model="tensorgpt"``, pretrained and hardware-aware (``model``), over
MetaSchedule's per-store features pooled per candidate plus the device vector (``features``).

Importing this package does not import xgboost (builder workers import the plugin, which
imports this); the booster loads with the first ``TensorGPTCostModel``.
"""

from .features import FEATURE_DIM, candidate_features
from .model import DEFAULT_COST_MODEL, CostModelError, Pretrained, ResidualConfig, TensorGPTCostModel

__all__ = [
    "DEFAULT_COST_MODEL",
    "FEATURE_DIM",
    "CostModelError",
    "Pretrained",
    "ResidualConfig",
    "TensorGPTCostModel",
    "candidate_features",
]
