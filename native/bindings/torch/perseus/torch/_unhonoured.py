"""Warnings (once each) about variables set for this job that perseus.torch cannot honour, and why."""

from perseus import config as perseus_config


def report(cfg: perseus_config.PerseusConfig) -> None:
    if cfg.nccl_enable:
        perseus_config.warn_not_honoured(
            "PERSEUS_NCCL_ENABLE",
            "the hybrid RDMA+VPC NCCL link is a feature of a special perseus build (the seed: ask for it by "
            "ticket); this build communicates through its engine's Gloo transport", cfg)
    perseus_config.warn_not_honoured(
        "PERSEUS_NCCL_NETWORK_INTERFACE",
        "this job has no NCCL communicator (perseus's engine moves host buffers over Gloo); the Gloo interface is "
        "PERSEUS_GLOO_NETWORK_INTERFACE", cfg)
    if cfg.downsample_n_elements == 1:
        perseus_config.warn_not_honoured(
            "PERSEUS_GRADIENT_MOMENTUM",
            "the momentum applies to the residual of gossip downsampling, which PERSEUS_DOWNSAMPLE_N_ELEMENTS=1 "
            "turns off", cfg)
    if cfg.is_set("PERSEUS_ALLREDUCE_DTYPE") and not (cfg.compresses_inside_node() or cfg.compresses_between_nodes()):
        perseus_config.warn_not_honoured(
            "PERSEUS_ALLREDUCE_GRADIENT_SCALE",
            "the gradient scale applies to fp16 compression only, and PERSEUS_ALLREDUCE_DTYPE=1 sends the gradients "
            "uncompressed", cfg)
