// The solver-callback driver: what 1_perseus_distribute_train.patch's PerseusSync does to a Caffe net,
// on a made-up net, through libperseus-caffe across the ranks of a real job (mpirun / perseusrun):
// rank 0's weights broadcast, then STEPS steps of "Backward" (a gradient that depends on the rank, the
// step and the weights), perseus_caffe_allreduce_average of every parameter's diff (submitted together),
// and an SGD "Update". Every rank can compute every rank's gradient, so each checks the averaged diffs
// against its own fp64 average (fp16 tolerance) and prints one line:
//   REPORT {"rank":..,"size":..,"checksum":..,"max_err":..,"fp16":..,"fused_groups":..,"collectives":..}
// Usage: perseus_caffe_driver [STEPS] [PARAM_COUNTS...]   (default 5 steps, params 1000 20 300000 7)
// CAFFE_DRIVER_CRASH_RANK=r: rank r aborts at step 1. CAFFE_DRIVER_NAN_RANK=r: rank r's first diff is NaN at step 1.
#include <perseus/caffe.h>
#include <perseus/engine.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace {

float initial(int rank, size_t p, size_t i) { return std::sin(0.001f * (i + 1) * (p + 1) + rank); }

// The gradient rank `rank` computes at `step` for weight w (a "loss" whose data depends on the rank).
double gradient(int rank, int step, size_t p, size_t i, float w) {
  return 0.5 * w + 0.01 * std::cos(0.37 * i + 1.3 * p + 0.7 * rank + 0.11 * step);
}

int fail(const char* what) {
  std::fprintf(stderr, "perseus_caffe_driver: %s: %s\n", what, perseus_caffe_last_error());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  int steps = argc > 1 ? std::atoi(argv[1]) : 5;
  std::vector<int64_t> counts;
  for (int a = 2; a < argc; ++a) counts.push_back(std::atoll(argv[a]));
  if (counts.empty()) counts = {1000, 20, 300000, 7};
  if (perseus_caffe_init() != 0) return fail("init");
  const int rank = perseus_caffe_rank(), size = perseus_caffe_size();
  std::printf("perseus_caffe_driver: %s\n", perseus_caffe_describe());

  std::vector<std::vector<float>> data(counts.size()), diff(counts.size());
  std::vector<void*> data_ptrs, diff_ptrs;
  for (size_t p = 0; p < counts.size(); ++p) {
    data[p].resize(counts[p]);
    diff[p].resize(counts[p]);
    for (size_t i = 0; i < data[p].size(); ++i) data[p][i] = initial(rank, p, i);
    data_ptrs.push_back(data[p].data());
    diff_ptrs.push_back(diff[p].data());
  }
  // PerseusSync's constructor: rank 0's weights everywhere
  if (perseus_caffe_broadcast(data_ptrs.data(), counts.data(), counts.size(), PERSEUS_CAFFE_FLOAT32, 0) != 0) {
    return fail("broadcast");
  }
  double broadcast_err = 0;
  for (size_t p = 0; p < counts.size(); ++p)
    for (size_t i = 0; i < data[p].size(); ++i) broadcast_err = std::fmax(broadcast_err, std::fabs(data[p][i] - initial(0, p, i)));

  double max_err = 0;
  const float lr = 0.1f;
  // CAFFE_DRIVER_CRASH_RANK=r: rank r dies at step 1 (a crashed Caffe process), for the tests that
  // the job then ends non-zero on every rank
  const char* crash = std::getenv("CAFFE_DRIVER_CRASH_RANK");
  // CAFFE_DRIVER_NAN_RANK=r: rank r's first gradient is NaN at step 1 (a diverged net), for the NaN check's tests
  const char* nan_rank = std::getenv("CAFFE_DRIVER_NAN_RANK");
  for (int step = 0; step < steps; ++step) {
    if (crash != nullptr && step == 1 && std::atoi(crash) == rank) std::abort();
    std::vector<std::vector<double>> expected(counts.size());
    for (size_t p = 0; p < counts.size(); ++p) {
      expected[p].assign(counts[p], 0.0);
      for (size_t i = 0; i < diff[p].size(); ++i) {
        diff[p][i] = static_cast<float>(gradient(rank, step, p, i, data[p][i]));
        if (nan_rank != nullptr && step == 1 && p == 0 && i == 0 && std::atoi(nan_rank) == rank) diff[p][i] = NAN;
        for (int r = 0; r < size; ++r) expected[p][i] += gradient(r, step, p, i, data[p][i]) / size;
      }
    }
    // on_gradients_ready(): between Backward and Update
    if (perseus_caffe_allreduce_average(diff_ptrs.data(), counts.data(), counts.size(), PERSEUS_CAFFE_FLOAT32) != 0) {
      return fail("allreduce");
    }
    for (size_t p = 0; p < counts.size(); ++p) {
      for (size_t i = 0; i < diff[p].size(); ++i) {
        // fp16 keeps 11 significant bits: relative 2^-11 of the largest term, plus the sum's rounding
        max_err = std::fmax(max_err, std::fabs(diff[p][i] - expected[p][i]) / (std::fabs(expected[p][i]) + 1e-3));
        data[p][i] -= lr * diff[p][i];  // ApplyUpdate()
      }
    }
  }
  double checksum = 0;
  for (size_t p = 0; p < counts.size(); ++p)
    for (size_t i = 0; i < data[p].size(); ++i) checksum += data[p][i] * (1.0 + 1e-3 * (i % 97));
  const perseus_engine_info* info = perseus_caffe_engine_info();
  std::printf("REPORT {\"rank\": %d, \"size\": %d, \"checksum\": %.9g, \"broadcast_err\": %.3g, \"max_err\": %.3g, "
              "\"fp16\": %d, \"fused_groups\": %llu, \"collectives\": %llu}\n",
              rank, size, checksum, broadcast_err, max_err, info ? info->intra_fp16 : 0,
              info ? static_cast<unsigned long long>(info->fused_groups) : 0ULL,
              info ? static_cast<unsigned long long>(info->collectives) : 0ULL);
  std::fflush(stdout);
  if (perseus_caffe_finalize() != 0) return fail("finalize");
  return 0;
}
