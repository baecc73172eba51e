"""Which PERSEUS_* variables perseus.tensorflow honours; hvd.init() warns (NotHonouredWarning, once) for
each one that is set but has no effect on TensorFlow, saying why. README's table is this one."""
from typing import Dict, List, Optional

from perseus import config as perseus_config

# variable -> None when honoured (by the engine, read at hvd.init()), else why it has no effect here
TENSORFLOW: Dict[str, Optional[str]] = {
    "PERSEUS_ALLREDUCE_DTYPE": None,
    "PERSEUS_ALLREDUCE_MODE": None,
    "PERSEUS_ALLREDUCE_GRADIENT_SCALE": None,
    "PERSEUS_ALLREDUCE_STREAMS": None,
    "PERSEUS_ALLREDUCE_FUSION": None,
    "PERSEUS_ALLREDUCE_NANCHECK": None,
    "PERSEUS_GLOO_NETWORK_INTERFACE": None,
    "GLOO_TIMEOUT_SECONDS": None,
    "PERSEUS_MASTER_PORT": None,
    "PERSEUS_NCCL_ENABLE": "not supported yet: the TensorFlow binding reduces host (CPU) tensors through Gloo only",
    "PERSEUS_NCCL_NETWORK_INTERFACE": "not supported yet: the TensorFlow binding uses no NCCL",
    "PERSEUS_ACCUMULATE_N_STEPS": "not supported yet by perseus.tensorflow (no gradient accumulation in its optimizers)",
    "PERSEUS_DOWNSAMPLE_N_ELEMENTS": "not supported yet by perseus.tensorflow (no gossip downsampling)",
    "PERSEUS_GRADIENT_MOMENTUM": "not supported yet by perseus.tensorflow (no gossip downsampling)",
    "PERSEUS_PERF_CHECK_N_STEPS": "not supported yet by perseus.tensorflow (no performance check)",
    "PERSEUS_OFFLINE_NEG": "not supported yet: the engine negotiates every cycle",
    "PERSEUS_CHANGE_HVD_ALLGATHER": "not applicable: Horovod's TensorFlow allgather always concatenates",
    "PERSEUS_USE_DDP_LAUNCHER": "not applicable: a PyTorch launcher setting",
}


def warn_not_honoured(config: Optional[perseus_config.PerseusConfig] = None) -> List[str]:
    """Warns for each variable set in the environment that TensorFlow does not honour; returns their names."""
    config = perseus_config.get() if config is None else config
    return [name for name, reason in sorted(TENSORFLOW.items())
            if reason is not None and perseus_config.warn_not_honoured(name, reason, config)]
