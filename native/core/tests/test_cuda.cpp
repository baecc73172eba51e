// The CUDA build: entry points present, arguments checked on the host (no GPU needed), and, when
// a GPU is present, kernels equal to the CPU scalar path (NaN payloads aside: CUDA writes canonical NaNs).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "half_bits.h"
#include "perseus/core.h"
#include "test_util.h"

namespace perseus {
namespace {

bool have_gpu() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

TEST(Cuda, BuiltWithTheRequestedArchitectures) {
  EXPECT_EQ(perseus_has_cuda(), 1);
  for (const std::string& arch : test::split_words(PERSEUS_TEST_CUDA_ARCHITECTURES)) {
    EXPECT_NE(std::string(perseus_cuda_architectures()).find(arch), std::string::npos) << arch;
  }
}

TEST(Cuda, ArgumentsAreCheckedBeforeAnyLaunch) {
  float* fake = reinterpret_cast<float*>(0x1000);  // never dereferenced: the checks fail first
  EXPECT_EQ(perseus_cuda_compress(fake, fake, PERSEUS_FLOAT16, 4, -1.0f, nullptr, nullptr), PERSEUS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(perseus_last_error()).find("gradient scale"), std::string::npos);
  EXPECT_EQ(perseus_cuda_decompress(fake, PERSEUS_BFLOAT16, fake, 4, 10.0f, 0, nullptr, nullptr),
            PERSEUS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(perseus_cuda_downsample_gather(fake, fake, 4, 4, 0, 0, nullptr), PERSEUS_ERR_INVALID_ARGUMENT);
  // nothing to do: no launch, success even without a GPU
  EXPECT_EQ(perseus_cuda_compress(nullptr, nullptr, PERSEUS_FLOAT16, 0, 10.0f, nullptr, nullptr), PERSEUS_OK);
}

template <typename T>
T* device_copy(const std::vector<T>& host) {
  T* ptr = nullptr;
  EXPECT_EQ(cudaMalloc(&ptr, host.size() * sizeof(T) + 16), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(ptr, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  return ptr;
}

template <typename T>
std::vector<T> host_copy(const T* ptr, size_t n) {
  std::vector<T> host(n);
  EXPECT_EQ(cudaMemcpy(host.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
  return host;
}

TEST(Cuda, KernelsMatchTheCpuScalarPath) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: kernels compiled and linked, not run";
  ASSERT_EQ(perseus_set_dispatch("scalar"), PERSEUS_OK);
  for (perseus_half_dtype dtype : {PERSEUS_FLOAT16, PERSEUS_BFLOAT16}) {
    for (size_t n : {size_t(1), size_t(1003), size_t(1) << 22}) {
      const std::vector<float> src = test::random_floats(n, 10.0f, n);
      std::vector<uint16_t> cpu(n);
      uint64_t cpu_count = 0;
      ASSERT_EQ(perseus_compress(src.data(), cpu.data(), dtype, n, 10.0f, &cpu_count), PERSEUS_OK);
      float* d_src = device_copy(src);
      uint16_t* d_dst = nullptr;
      unsigned long long* d_count = nullptr;
      ASSERT_EQ(cudaMalloc(&d_dst, n * 2), cudaSuccess);
      ASSERT_EQ(cudaMalloc(&d_count, sizeof(unsigned long long)), cudaSuccess);
      ASSERT_EQ(cudaMemset(d_count, 0, sizeof(unsigned long long)), cudaSuccess);
      ASSERT_EQ(perseus_cuda_compress(d_src, d_dst, dtype, n, 10.0f, d_count, nullptr), PERSEUS_OK) << perseus_last_error();
      const std::vector<uint16_t> gpu = host_copy(d_dst, n);
      EXPECT_EQ(host_copy(d_count, 1)[0], cpu_count);
      const uint16_t exp_mask = dtype == PERSEUS_FLOAT16 ? 0x7c00 : 0x7f80;
      for (size_t i = 0; i < n; ++i) {
        const bool nan = (cpu[i] & exp_mask) == exp_mask && (cpu[i] & ~exp_mask & 0x7fff) != 0;
        if (nan) {
          ASSERT_EQ(gpu[i] & exp_mask, exp_mask);
          continue;
        }
        ASSERT_EQ(gpu[i], cpu[i]) << "element " << i << " input bits " << float_bits(src[i]);
      }
      // decompress the CPU's output on both
      std::vector<float> cpu_back(n);
      uint64_t cpu_back_count = 0;
      ASSERT_EQ(perseus_decompress(cpu.data(), dtype, cpu_back.data(), n, 10.0f, 8, &cpu_back_count), PERSEUS_OK);
      uint16_t* d_wire = device_copy(cpu);
      float* d_back = nullptr;
      ASSERT_EQ(cudaMalloc(&d_back, n * 4), cudaSuccess);
      ASSERT_EQ(cudaMemset(d_count, 0, sizeof(unsigned long long)), cudaSuccess);
      ASSERT_EQ(perseus_cuda_decompress(d_wire, dtype, d_back, n, 10.0f, 8, d_count, nullptr), PERSEUS_OK);
      const std::vector<float> gpu_back = host_copy(d_back, n);
      EXPECT_EQ(host_copy(d_count, 1)[0], cpu_back_count);
      for (size_t i = 0; i < n; ++i) {
        if (std::isnan(cpu_back[i])) {
          ASSERT_TRUE(std::isnan(gpu_back[i]));
        } else {
          ASSERT_EQ(float_bits(gpu_back[i]), float_bits(cpu_back[i])) << i;
        }
      }
      for (void* p : {static_cast<void*>(d_src), static_cast<void*>(d_dst), static_cast<void*>(d_count),
                      static_cast<void*>(d_wire), static_cast<void*>(d_back)}) {
        cudaFree(p);
      }
    }
  }
  perseus_set_dispatch("auto");
}

TEST(Cuda, DownsampleAndPackMatchTheCpu) {
  if (!have_gpu()) GTEST_SKIP() << "no GPU: kernels compiled and linked, not run";
  const uint64_t numel = 100003, n = 4;
  const std::vector<float> grad = test::random_floats(numel, 1.0f, 5);
  std::vector<float> residual(numel, 0.25f);
  for (uint64_t step = 0; step < 3; ++step) {
    const uint64_t count = perseus_downsample_count(numel, n, step);
    std::vector<float> cpu_sent(count), cpu_res = residual;
    ASSERT_EQ(perseus_downsample_gather_momentum(grad.data(), cpu_res.data(), cpu_sent.data(), numel, n, step, 0.9f),
              PERSEUS_OK);
    float* d_grad = device_copy(grad);
    float* d_res = device_copy(residual);
    float* d_sent = nullptr;
    ASSERT_EQ(cudaMalloc(&d_sent, count * 4), cudaSuccess);
    ASSERT_EQ(perseus_cuda_downsample_gather_momentum(d_grad, d_res, d_sent, numel, n, step, 0.9f, nullptr), PERSEUS_OK);
    const auto gpu_sent = host_copy(d_sent, count);
    const auto gpu_res = host_copy(d_res, numel);
    for (uint64_t j = 0; j < count; ++j) {
      if (!std::isnan(cpu_sent[j])) ASSERT_EQ(float_bits(gpu_sent[j]), float_bits(cpu_sent[j])) << j;
    }
    for (uint64_t i = 0; i < numel; ++i) {
      if (!std::isnan(cpu_res[i])) ASSERT_EQ(float_bits(gpu_res[i]), float_bits(cpu_res[i])) << i;
    }
    residual = cpu_res;
    cudaFree(d_grad);
    cudaFree(d_res);
    cudaFree(d_sent);
  }
  // pack three buffers (one unaligned) and unpack them again
  std::vector<float> a(1000, 1.0f), b(3, 2.0f), c(70000, 3.0f);
  float* da = device_copy(a);
  float* db = device_copy(b);
  float* dc = device_copy(c);
  float* flat = nullptr;
  ASSERT_EQ(cudaMalloc(&flat, (a.size() + b.size() + c.size()) * 4), cudaSuccess);
  const void* srcs[3] = {da, db, dc};
  const uint64_t nbytes[3] = {a.size() * 4, b.size() * 4, c.size() * 4};
  ASSERT_EQ(perseus_cuda_pack(srcs, nbytes, 3, flat, nullptr), PERSEUS_OK);
  const auto packed = host_copy(flat, a.size() + b.size() + c.size());
  EXPECT_EQ(packed[999], 1.0f);
  EXPECT_EQ(packed[1000], 2.0f);
  EXPECT_EQ(packed[1003], 3.0f);
  EXPECT_EQ(packed.back(), 3.0f);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dc);
  cudaFree(flat);
}

}  // namespace
}  // namespace perseus
