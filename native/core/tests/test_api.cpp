// The C ABI: argument checks (a named problem, nothing written), version and feature strings.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "perseus/core.h"

namespace {

std::string last_error() { return perseus_last_error(); }

TEST(Api, VersionAndAbi) {
  EXPECT_EQ(perseus_core_abi_version(), PERSEUS_CORE_ABI_VERSION);
  EXPECT_EQ(std::string(perseus_core_version()), PERSEUS_TEST_EXPECTED_VERSION);
  EXPECT_STREQ(perseus_status_string(PERSEUS_ERR_UNSUPPORTED), "not supported");
}

TEST(Api, CpuFeaturesNameWhatTheDispatcherUses) {
  const std::string features = perseus_cpu_features();
#if defined(__x86_64__)
  EXPECT_EQ(features.find("avx2") != std::string::npos, __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(features.find("avx512bf16") != std::string::npos, __builtin_cpu_supports("avx512bf16") != 0);
#endif
}

TEST(Api, BadScaleIsRefusedAndNothingIsWritten) {
  const float src[4] = {1, 2, 3, 4};
  uint16_t dst[4] = {7, 7, 7, 7};
  uint64_t count = 99;
  for (float bad : {0.0f, -1.0f, INFINITY, NAN}) {
    EXPECT_EQ(perseus_compress(src, dst, PERSEUS_FLOAT16, 4, bad, &count), PERSEUS_ERR_INVALID_ARGUMENT);
    EXPECT_NE(last_error().find("PERSEUS_ALLREDUCE_GRADIENT_SCALE"), std::string::npos) << last_error();
  }
  EXPECT_EQ(dst[0], 7);
  EXPECT_EQ(count, 99u);
}

TEST(Api, BadWorldSizeAndDtypeAreRefused) {
  const uint16_t src[2] = {0x3c00, 0x3c00};
  float dst[2] = {5, 5};
  EXPECT_EQ(perseus_decompress(src, PERSEUS_FLOAT16, dst, 2, 10.0f, 0, nullptr), PERSEUS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("world size 0"), std::string::npos) << last_error();
  EXPECT_EQ(perseus_decompress(src, static_cast<perseus_half_dtype>(5), dst, 2, 10.0f, 1, nullptr),
            PERSEUS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("dtype 5"), std::string::npos) << last_error();
  EXPECT_EQ(dst[0], 5.0f);
  // a good call clears the message
  EXPECT_EQ(perseus_decompress(src, PERSEUS_FLOAT16, dst, 2, 10.0f, 2, nullptr), PERSEUS_OK);
  EXPECT_EQ(last_error(), "");
  EXPECT_EQ(dst[0], 0.05f);
}

TEST(Api, NullBuffersAreRefusedUnlessEmpty) {
  EXPECT_EQ(perseus_compress(nullptr, nullptr, PERSEUS_BFLOAT16, 3, 1.0f, nullptr), PERSEUS_ERR_INVALID_ARGUMENT);
  uint64_t count = 5;
  EXPECT_EQ(perseus_compress(nullptr, nullptr, PERSEUS_BFLOAT16, 0, 1.0f, &count), PERSEUS_OK);
  EXPECT_EQ(count, 0u);
}

TEST(Api, RoundTripAveragesOverTheWorld) {
  // 4 ranks with the same gradient: their fp16 sum is what rank 0 compresses from 4x the gradient
  const std::vector<float> grad = {0.5f, -1.25f, 3.0f, 1e-3f};
  std::vector<float> summed;
  for (float g : grad) summed.push_back(4.0f * g);
  std::vector<uint16_t> wire(4);
  ASSERT_EQ(perseus_compress(summed.data(), wire.data(), PERSEUS_FLOAT16, 4, 10.0f, nullptr), PERSEUS_OK);
  std::vector<float> back(4);
  uint64_t nonfinite = 1;
  ASSERT_EQ(perseus_decompress(wire.data(), PERSEUS_FLOAT16, back.data(), 4, 10.0f, 4, &nonfinite), PERSEUS_OK);
  EXPECT_EQ(nonfinite, 0u);
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(back[i], grad[i], std::fabs(grad[i]) * 1e-3f);
}

TEST(Api, CudaEntryPointsAgreeWithTheBuild) {
  const bool has_cuda = perseus_has_cuda() != 0;
  EXPECT_EQ(has_cuda, PERSEUS_TEST_EXPECT_CUDA != 0);
  if (!has_cuda) {
    EXPECT_EQ(perseus_cuda_compress(nullptr, nullptr, PERSEUS_FLOAT16, 0, 1.0f, nullptr, nullptr),
              PERSEUS_ERR_UNSUPPORTED);
    EXPECT_NE(last_error().find("built without CUDA"), std::string::npos);
    EXPECT_STREQ(perseus_cuda_architectures(), "");
  }
}

}  // namespace
