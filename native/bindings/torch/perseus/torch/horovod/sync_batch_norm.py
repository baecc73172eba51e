"""hvd.SyncBatchNorm: batch normalisation whose batch statistics span all ranks."""

from typing import Any, Optional, Tuple

import torch
import torch.nn.functional as F
from torch.nn.modules.batchnorm import _BatchNorm

from perseus.torch import _control as _ops
from perseus.torch.horovod import basics


def _allreduce_sum(tensor: torch.Tensor) -> torch.Tensor:
    basics.world()
    _ops.allreduce(tensor).wait()
    return tensor


def _channels_first(x: torch.Tensor) -> torch.Tensor:
    return x.transpose(0, 1).reshape(x.shape[1], -1)


def _per_channel(v: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return v.reshape((1, -1) + (1,) * (like.dim() - 2))


class _SyncBatchNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, input: torch.Tensor, weight: Optional[torch.Tensor], bias: Optional[torch.Tensor],
                running_mean: Optional[torch.Tensor], running_var: Optional[torch.Tensor], eps: float,
                momentum: float) -> torch.Tensor:
        x = _channels_first(input).double()
        stats = torch.cat([x.sum(1), (x * x).sum(1), torch.tensor([float(x.shape[1])], dtype=torch.float64)])
        stats = _allreduce_sum(stats)
        channels = input.shape[1]
        count = stats[-1]
        mean = stats[:channels] / count
        var = stats[channels: 2 * channels] / count - mean * mean
        invstd = torch.rsqrt(var + eps)
        if running_mean is not None and running_var is not None:
            unbiased = var * count / max(float(count) - 1.0, 1.0)
            running_mean.mul_(1 - momentum).add_(momentum * mean.to(running_mean.dtype))
            running_var.mul_(1 - momentum).add_(momentum * unbiased.to(running_var.dtype))
        mean_c, invstd_c = mean.to(input.dtype), invstd.to(input.dtype)
        out = (input - _per_channel(mean_c, input)) * _per_channel(invstd_c, input)
        if weight is not None:
            out = out * _per_channel(weight, input)
        if bias is not None:
            out = out + _per_channel(bias, input)
        ctx.save_for_backward(input, weight, mean_c, invstd_c, count.to(input.dtype))
        ctx.has_bias = bias is not None
        return out

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> Tuple[Any, ...]:
        input, weight, mean, invstd, count = ctx.saved_tensors
        g = _channels_first(grad_out.contiguous())
        xmu = _channels_first(input) - mean[:, None]
        local = torch.cat([g.sum(1), (g * xmu).sum(1)])
        channels = input.shape[1]
        grad_weight = local[channels:] * invstd if weight is not None else None
        grad_bias = local[:channels].clone() if ctx.has_bias else None
        total = _allreduce_sum(local.clone())
        sum_dy, sum_dy_xmu = total[:channels] / count, total[channels:] / count
        scale = invstd * (weight if weight is not None else 1.0)
        grad_x = (g - sum_dy[:, None] - xmu * (invstd * invstd * sum_dy_xmu)[:, None]) * scale[:, None]
        grad_input = grad_x.reshape((channels, input.shape[0]) + tuple(input.shape[2:])).transpose(0, 1)
        return grad_input, grad_weight, grad_bias, None, None, None, None


class SyncBatchNorm(_BatchNorm):
    """BatchNorm over the whole job's batch in training (statistics are summed over all ranks)."""

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: Optional[float] = 0.1, affine: bool = True,
                 track_running_stats: bool = True) -> None:
        super(SyncBatchNorm, self).__init__(num_features, eps, momentum, affine, track_running_stats)

    def _check_input_dim(self, input: torch.Tensor) -> None:
        if input.dim() < 2:
            raise ValueError("expected at least 2D input (got {}D input)".format(input.dim()))

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        self._check_input_dim(input)
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.training and self.track_running_stats:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked)
        if not self.training or basics.size() == 1:
            use_batch = self.training or not self.track_running_stats
            return F.batch_norm(input, self.running_mean, self.running_var, self.weight, self.bias,
                                use_batch, momentum, self.eps)
        tracked = self.track_running_stats
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias,
                                            self.running_mean if tracked else None,
                                            self.running_var if tracked else None, self.eps, momentum)
