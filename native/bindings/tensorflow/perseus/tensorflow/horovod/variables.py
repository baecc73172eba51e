"""Which PERSEUS_* variables perseus.tensorflow honours; hvd.init() warns (NotHonouredWarning, once) for
each one that is set but has no effect on TensorFlow, saying why. README's table is this one."""
from typing import Dict, List, Optional

from perseus import config as perseus_config

# Why a variable has no effect on TensorFlow; whether it is honoured is its declaration's (perseus.config,
# honoured_by), so this table only says why not.
NOT_HONOURED_BECAUSE: Dict[str, str] = {
    "PERSEUS_NCCL_ENABLE": "not supported yet: the TensorFlow binding reduces host (CPU) tensors through Gloo only",
    "PERSEUS_NCCL_NETWORK_INTERFACE": "not supported yet: the TensorFlow binding uses no NCCL",
    "PERSEUS_ACCUMULATE_N_STEPS": "not supported yet by perseus.tensorflow (no gradient accumulation in its optimizers)",
    "PERSEUS_DOWNSAMPLE_N_ELEMENTS": "not supported yet by perseus.tensorflow (no gossip downsampling)",
    "PERSEUS_GRADIENT_MOMENTUM": "not supported yet by perseus.tensorflow (no gossip downsampling)",
    "PERSEUS_PERF_CHECK_N_STEPS": "not supported yet by perseus.tensorflow (no performance check)",
    "PERSEUS_CHANGE_HVD_ALLGATHER": "not applicable: Horovod's TensorFlow allgather always concatenates",
    "PERSEUS_USE_DDP_LAUNCHER": "not applicable: a PyTorch launcher setting",
}
# variable -> None when honoured (by the engine, read at hvd.init()), else why it has no effect here
TENSORFLOW: Dict[str, Optional[str]] = {
    spec.name: None if "tensorflow" in spec.honoured_by else NOT_HONOURED_BECAUSE.get(spec.name, "not supported yet by perseus.tensorflow")
    for spec in perseus_config.VARIABLES
}


def warn_not_honoured(config: Optional[perseus_config.PerseusConfig] = None) -> List[str]:
    """Warns for each variable set in the environment that TensorFlow does not honour; returns their names."""
    config = perseus_config.get() if config is None else config
    return [name for name, reason in sorted(TENSORFLOW.items())
            if reason is not None and perseus_config.warn_not_honoured(name, reason, config)]
