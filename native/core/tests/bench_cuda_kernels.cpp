// Throughput of the core's CUDA fp16 kernels (compress fp32 -> fp16, decompress fp16 -> fp32) against the
// device's memory bandwidth: a benchmark (bench/gpu_device_check.py runs it on a lent GPU), not a test.
// Prints one JSON line: GB/s of each kernel (bytes read + written), of a device-to-device cudaMemcpy (the
// achievable bandwidth, read + write), the theoretical peak from the device's attributes when CUDA reports
// them, and the kernels' fraction of the cudaMemcpy figure. Usage: bench_cuda_kernels [MiB of fp32] [reps]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "perseus/core.h"

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(2);
  }
}

void check(perseus_status s, const char* what) {
  if (s != PERSEUS_OK) {
    std::fprintf(stderr, "%s: %s\n", what, perseus_last_error());
    std::exit(2);
  }
}

template <typename F>
double median_seconds(F&& run, int reps) {
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  run();  // warm-up
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    check(cudaEventRecord(start), "cudaEventRecord");
    run();
    check(cudaEventRecord(stop), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    times.push_back(ms / 1e3);
  }
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 256;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 20;
  const size_t n = mib * 1024 * 1024 / 4;
  float *src = nullptr, *dst = nullptr;
  void* half = nullptr;
  check(cudaMalloc(&src, n * 4), "cudaMalloc");
  check(cudaMalloc(&dst, n * 4), "cudaMalloc");
  check(cudaMalloc(&half, n * 2), "cudaMalloc");
  check(cudaMemset(src, 0x3c, n * 4), "cudaMemset");  // finite values, no NaN counting effects
  const double compress = median_seconds([&] {
    check(perseus_cuda_compress(src, half, PERSEUS_FLOAT16, n, 10.0f, nullptr, nullptr), "compress");
  }, reps);
  const double decompress = median_seconds([&] {
    check(perseus_cuda_decompress(half, PERSEUS_FLOAT16, dst, n, 10.0f, 2, nullptr, nullptr), "decompress");
  }, reps);
  const double copy = median_seconds([&] { check(cudaMemcpy(dst, src, n * 4, cudaMemcpyDeviceToDevice), "copy"); }, reps);
  const double gb = 1e9;
  const double kernel_bytes = double(n) * 6, copy_bytes = double(n) * 8;
  int device = 0, bus_bits = 0, mem_khz = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, device);
  if (cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess) mem_khz = 0;
  const double peak = mem_khz > 0 && bus_bits > 0 ? 2.0 * mem_khz * 1e3 * bus_bits / 8 / gb : 0.0;
  const double copy_gbs = copy_bytes / copy / gb;
  std::printf("{\"device\": \"%s\", \"mib\": %zu, \"reps\": %d, \"compress_gbs\": %.1f, \"decompress_gbs\": %.1f, "
              "\"memcpy_d2d_gbs\": %.1f, \"peak_gbs\": %.1f, \"compress_vs_memcpy\": %.3f, "
              "\"decompress_vs_memcpy\": %.3f}\n",
              prop.name, mib, reps, kernel_bytes / compress / gb, kernel_bytes / decompress / gb, copy_gbs, peak,
              kernel_bytes / compress / gb / copy_gbs, kernel_bytes / decompress / gb / copy_gbs);
  return 0;
}
