"""torch.ops.perseus.* against torch / numpy reference computations, on every CPU dispatch path."""
import numpy as np
import pytest


def edge_values(torch):
    bits = [
        0x00000000, 0x00000001, 0x007FFFFF, 0x00800000, 0x33000000, 0x33000001, 0x33800000, 0x387FC000,
        0x387FE000, 0x38800000, 0x3F801000, 0x3F803000, 0x3F808000, 0x3F818000, 0x477FE000, 0x477FEFFF,
        0x477FF000, 0x47800000, 0x7F7F7FFF, 0x7F7F8000, 0x7F7FFFFF, 0x7F800000, 0x7F800001, 0x7FC00000,
        0x7FC12345, 0x00018000, 0x00008000,
    ]
    values = np.array(bits + [b | 0x80000000 for b in bits], dtype=np.uint32).view(np.float32)
    return torch.from_numpy(values.copy())


def random_gradients(torch, n, seed):
    gen = torch.Generator().manual_seed(seed)
    magnitudes = torch.pow(10.0, torch.randint(-12, 8, (n,), generator=gen).float() / 2)
    values = torch.randn(n, generator=gen) * magnitudes
    raw = torch.randint(-(2 ** 31), 2 ** 31 - 1, (n // 10,), generator=gen, dtype=torch.int64)
    values[: n // 10] = torch.from_numpy(raw.numpy().astype(np.int64).astype(np.uint32).view(np.float32).copy())
    return values[torch.randperm(n, generator=gen)]


def assert_same_half(got, want, torch):
    """Bit-equal, except that any NaN matches any NaN (torch canonicalises NaN payloads)."""
    g = got.view(torch.int16).numpy().view(np.uint16)
    w = want.view(torch.int16).numpy().view(np.uint16)
    nan = torch.isnan(want.float()).numpy()
    assert np.array_equal(torch.isnan(got.float()).numpy(), nan)
    mismatch = np.nonzero((g != w) & ~nan)[0]
    assert mismatch.size == 0, "first mismatches at %s: got %s want %s" % (
        mismatch[:5], [hex(x) for x in g[mismatch[:5]]], [hex(x) for x in w[mismatch[:5]]])


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
@pytest.mark.parametrize("scale", [1.0, 10.0, 0.125, 3000.0])
def test_compress_matches_torch_eager_on_every_path(torch, ops, each_dispatch, dtype_name, scale):
    dtype = getattr(torch, dtype_name)
    src = torch.cat([edge_values(torch), random_gradients(torch, 100003, 1)])
    want = (src * scale).to(dtype)
    want_nonfinite = int((~torch.isfinite(want.float())).sum())
    for path in each_dispatch:
        assert ops.set_dispatch(path) == path
        dst = torch.empty_like(src, dtype=dtype)
        count = ops.compress(src, dst, scale)
        assert count.dtype == torch.int64 and count.dim() == 0
        assert int(count) == want_nonfinite, path
        assert_same_half(dst, want, torch)


def test_compress_matches_numpy_float16_bit_for_bit(torch, ops, each_dispatch):
    src = torch.cat([edge_values(torch), random_gradients(torch, 50000, 2)])
    with np.errstate(over="ignore", invalid="ignore"):  # inf/NaN results are the point
        want = (src.numpy() * np.float32(10.0)).astype(np.float16).view(np.uint16)
    nan = np.isnan(want.view(np.float16))
    for path in each_dispatch:
        ops.set_dispatch(path)
        dst = torch.empty(src.numel(), dtype=torch.float16)
        ops.compress(src, dst, 10.0)
        got = dst.view(torch.int16).numpy().view(np.uint16)
        assert np.array_equal(got[~nan], want[~nan]), path
        assert np.isnan(got.view(np.float16)[nan]).all()


def test_overflow_after_scaling_is_counted(torch, ops):
    src = torch.tensor([1.0, 7000.0, -7000.0, 6000.0, float("inf"), float("nan")])
    dst = torch.empty(6, dtype=torch.float16)
    assert int(ops.compress(src, dst, 10.0)) == 4
    assert dst[1].item() == float("inf") and dst[2].item() == float("-inf") and dst[3].item() == 60000.0


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
@pytest.mark.parametrize("scale,world", [(10.0, 1), (10.0, 8), (1.0, 3), (1024.0, 64)])
def test_decompress_unscales_and_averages_in_place(torch, ops, each_dispatch, dtype_name, scale, world):
    dtype = getattr(torch, dtype_name)
    every_pattern = torch.arange(-(2 ** 15), 2 ** 15, dtype=torch.int32).to(torch.int16).view(dtype)
    factor = np.float32(1.0 / (scale * world))
    want = every_pattern.float() * torch.tensor(float(factor))
    want_nonfinite = int((~torch.isfinite(want)).sum())
    for path in each_dispatch:
        ops.set_dispatch(path)
        dst = torch.full((every_pattern.numel(),), -7.0)
        storage = dst.data_ptr()
        count = ops.decompress(every_pattern, dst, scale, world)
        assert dst.data_ptr() == storage
        assert int(count) == want_nonfinite
        nan = torch.isnan(want)
        assert torch.equal(torch.isnan(dst), nan)
        assert torch.equal(dst[~nan], want[~nan]), path


def test_fp16_sum_overflow_is_reported_by_decompress(torch, ops):
    # two ranks each sent 40000 (scaled): their fp16 sum is inf
    summed = torch.tensor([40000.0], dtype=torch.float16) + torch.tensor([40000.0], dtype=torch.float16)
    out = torch.empty(1)
    assert int(ops.decompress(summed, out, 10.0, 2)) == 1


def test_threads_give_the_same_result_as_one(torch, ops):
    src = random_gradients(torch, (1 << 23) + 11, 3)
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = torch.empty_like(src, dtype=torch.float16)
        c1 = ops.compress(src, one, 10.0)
        torch.set_num_threads(2)
        two = torch.empty_like(src, dtype=torch.float16)
        c2 = ops.compress(src, two, 10.0)
    finally:
        torch.set_num_threads(old)
    assert torch.equal(one.view(torch.int16), two.view(torch.int16))
    assert int(c1) == int(c2)


def test_bad_arguments_raise_clear_errors_and_write_nothing(torch, ops):
    src = torch.ones(8)
    dst = torch.zeros(8, dtype=torch.float16)
    with pytest.raises(ValueError, match="PERSEUS_ALLREDUCE_GRADIENT_SCALE"):
        ops.compress(src, dst, 0.0)
    with pytest.raises(TypeError, match="float16 or bfloat16"):
        ops.compress(src, torch.zeros(8), 1.0)
    with pytest.raises(TypeError, match="must be float32"):
        ops.compress(src.double(), dst, 1.0)
    with pytest.raises(ValueError, match="8 elements but dst has 4"):
        ops.compress(src, torch.zeros(4, dtype=torch.float16), 1.0)
    with pytest.raises(ValueError, match="contiguous"):
        ops.compress(torch.ones(16)[::2], dst, 1.0)
    with pytest.raises(ValueError, match="world size 0"):
        ops.decompress(dst, torch.zeros(8), 10.0, 0)
    assert torch.equal(dst, torch.zeros(8, dtype=torch.float16))


def test_set_dispatch_refuses_unknown_paths(torch, ops):
    with pytest.raises(ValueError, match="unknown dispatch path; use one of: auto scalar"):
        ops.set_dispatch("avx9")
    assert ops.set_dispatch("auto") == ops.dispatch_paths().split()[-1]
    assert "avx2" in ops.cpu_features() or ops.dispatch() == "scalar"


def test_plan_buckets(torch, ops):
    assert ops.plan_buckets([4, 4, 4, 4], 0) == [[0], [1], [2], [3]]
    assert ops.plan_buckets([4] * 16, 4) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11], [12, 13, 14, 15]]
    assert ops.plan_buckets([], 16) == []
    assert ops.plan_buckets([100, 1, 1, 1], 2) == [[0], [1, 2, 3]]
    sizes = [4 << 20] * 100  # 400 MiB: auto makes 13 buckets (about 32 MiB each)
    assert len(ops.plan_buckets(sizes, None)) == 13
    plan = ops.plan_buckets(sizes, 16)
    assert len(plan) <= 16 and sum(plan, []) == list(range(100))
    with pytest.raises(ValueError, match="0 \\(no fusion\\) .. 128"):
        ops.plan_buckets([4], 129)
    with pytest.raises(ValueError, match="sizes are >= 0"):
        ops.plan_buckets([4, -1], 2)


def test_pack_and_unpack_round_trip(torch, ops):
    tensors = [torch.randn(3, 4), torch.randn(0), torch.randn(7), torch.randn(2, 2, 2)]
    flat = torch.zeros(sum(t.numel() for t in tensors) + 5)
    ops.pack(tensors, flat)
    assert torch.equal(flat[:-5], torch.cat([t.reshape(-1) for t in tensors]))
    back = [torch.empty_like(t) for t in tensors]
    ops.unpack(flat * 2, back)
    for t, b in zip(tensors, back):
        assert torch.equal(b, t * 2)
    with pytest.raises(ValueError, match="the flat buffer only"):
        ops.pack(tensors, torch.zeros(3))
    with pytest.raises(TypeError, match="Half but the flat buffer is Float"):
        ops.pack([torch.zeros(2, dtype=torch.float16)], flat)


@pytest.mark.parametrize("n", [1, 2, 3, 8])
def test_downsample_gather_scatter_follow_the_rotating_offset(torch, ops, n):
    src = torch.arange(101, dtype=torch.float32)
    for step in range(2 * n):
        count = ops.downsample_count(src.numel(), n, step)
        sent = torch.empty(count)
        ops.downsample_gather(src, sent, n, step)
        assert torch.equal(sent, src[step % n::n])
        full = torch.full_like(src, 5.0)
        ops.downsample_scatter(sent, full, n, step)
        want = torch.zeros_like(src)
        want[step % n::n] = src[step % n::n]
        assert torch.equal(full, want)
        kept = torch.full_like(src, 5.0)
        ops.downsample_scatter(sent, kept, n, step, zero_unsent=False)
        want = torch.full_like(src, 5.0)
        want[step % n::n] = src[step % n::n]
        assert torch.equal(kept, want)
    with pytest.raises(ValueError, match="sends"):
        ops.downsample_gather(src, torch.empty(3), n, 0)


@pytest.mark.parametrize("momentum", [1.0, 0.9])
def test_downsample_momentum_matches_the_definition(torch, ops, momentum):
    n, numel = 4, 10007
    gen = torch.Generator().manual_seed(0)
    residual = torch.zeros(numel)
    model = torch.zeros(numel)
    m = torch.tensor(momentum, dtype=torch.float32)
    for step in range(3 * n):
        grad = torch.randn(numel, generator=gen)
        sent = torch.empty(ops.downsample_count(numel, n, step))
        ops.downsample_gather_momentum(grad, residual, sent, n, step, momentum)
        acc = grad + m * model  # two roundings, as specified
        assert torch.equal(sent, acc[step % n::n])
        model = acc.clone()
        model[step % n::n] = 0
        assert torch.equal(residual, model)


def test_ops_and_core_report_versions(torch, ops):
    import json

    manifest = json.loads(ops.build_manifest())
    assert ops.core_version() == manifest["release"]
    assert ops.has_cuda() == (manifest["cuda_toolkit"] is not None)
