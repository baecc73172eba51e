// Gossip downsampling and the momentum residual against a direct transcription of the definition.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "half_bits.h"
#include "perseus/core.h"

namespace {

TEST(Downsample, CountFollowsTheRotatingOffset) {
  EXPECT_EQ(perseus_downsample_count(10, 4, 0), 3u);  // 0 4 8
  EXPECT_EQ(perseus_downsample_count(10, 4, 1), 3u);  // 1 5 9
  EXPECT_EQ(perseus_downsample_count(10, 4, 2), 2u);  // 2 6
  EXPECT_EQ(perseus_downsample_count(10, 4, 7), 2u);  // offset 3: 3 7
  EXPECT_EQ(perseus_downsample_count(2, 4, 3), 0u);
  EXPECT_EQ(perseus_downsample_count(10, 1, 5), 10u);
}

TEST(Downsample, GatherAndScatterEveryElementSize) {
  for (uint64_t n : {1u, 2u, 3u, 8u}) {
    for (uint64_t step = 0; step < 2 * n; ++step) {
      const uint64_t numel = 37;
      std::vector<uint64_t> src(numel);
      for (uint64_t i = 0; i < numel; ++i) src[i] = 1000 + i;
      const uint64_t count = perseus_downsample_count(numel, n, step);
      std::vector<uint64_t> sent(count + 1, 0);
      ASSERT_EQ(perseus_downsample_gather(src.data(), sent.data(), 8, numel, n, step), PERSEUS_OK);
      for (uint64_t j = 0; j < count; ++j) EXPECT_EQ(sent[j], 1000 + step % n + j * n);
      EXPECT_EQ(sent[count], 0u) << "wrote past count";
      std::vector<uint64_t> full(numel, 5);
      ASSERT_EQ(perseus_downsample_scatter(sent.data(), full.data(), 8, numel, n, step, 1), PERSEUS_OK);
      std::vector<uint64_t> kept(numel, 5);
      ASSERT_EQ(perseus_downsample_scatter(sent.data(), kept.data(), 8, numel, n, step, 0), PERSEUS_OK);
      for (uint64_t i = 0; i < numel; ++i) {
        const bool is_sent = i % n == step % n;
        EXPECT_EQ(full[i], is_sent ? src[i] : 0u);
        EXPECT_EQ(kept[i], is_sent ? src[i] : 5u);
      }
      // 2- and 4-byte elements take the same indices
      std::vector<uint16_t> s16(numel), d16(count);
      std::vector<uint32_t> s32(numel), d32(count);
      for (uint64_t i = 0; i < numel; ++i) s16[i] = static_cast<uint16_t>(i), s32[i] = static_cast<uint32_t>(i);
      ASSERT_EQ(perseus_downsample_gather(s16.data(), d16.data(), 2, numel, n, step), PERSEUS_OK);
      ASSERT_EQ(perseus_downsample_gather(s32.data(), d32.data(), 4, numel, n, step), PERSEUS_OK);
      for (uint64_t j = 0; j < count; ++j) {
        EXPECT_EQ(d16[j], step % n + j * n);
        EXPECT_EQ(d32[j], step % n + j * n);
      }
    }
  }
}

TEST(Downsample, MomentumMatchesDefinitionOverManySteps) {
  const uint64_t numel = 10007;  // crosses the internal 4096-element blocks with a ragged end
  std::mt19937 rng(3);
  std::normal_distribution<float> normal;
  for (uint64_t n : {1u, 2u, 4u, 5u}) {
    for (float m : {1.0f, 0.9f, 0.0f}) {
      std::vector<float> residual(numel, 0.0f), model(numel, 0.0f);
      for (uint64_t step = 0; step < 3 * n; ++step) {
        std::vector<float> grad(numel);
        for (auto& g : grad) g = normal(rng);
        const uint64_t count = perseus_downsample_count(numel, n, step);
        std::vector<float> sent(count);
        ASSERT_EQ(perseus_downsample_gather_momentum(grad.data(), residual.data(), sent.data(), numel, n, step, m),
                  PERSEUS_OK);
        uint64_t j = 0;
        for (uint64_t i = 0; i < numel; ++i) {
          volatile float decayed = m * model[i];  // volatile: rounded on its own, as specified
          const float acc = grad[i] + decayed;
          if (i % n == step % n) {
            ASSERT_EQ(perseus::float_bits(sent[j]), perseus::float_bits(acc)) << "i=" << i << " step=" << step;
            ++j;
            model[i] = 0.0f;
          } else {
            model[i] = acc;
          }
        }
        ASSERT_EQ(j, count);
        ASSERT_EQ(std::memcmp(residual.data(), model.data(), numel * sizeof(float)), 0) << "residual, step " << step;
      }
    }
  }
}

TEST(Downsample, MomentumOneConservesTheGradient) {
  // with m = 1 every element is sent once per n steps carrying the sum of its n gradients
  const uint64_t numel = 64, n = 4;
  std::vector<float> residual(numel, 0.0f), total_sent(numel, 0.0f), total_grad(numel, 0.0f);
  for (uint64_t step = 0; step < n; ++step) {
    std::vector<float> grad(numel);
    for (uint64_t i = 0; i < numel; ++i) grad[i] = static_cast<float>((i + 1) * (step + 1));
    std::vector<float> sent(perseus_downsample_count(numel, n, step));
    ASSERT_EQ(perseus_downsample_gather_momentum(grad.data(), residual.data(), sent.data(), numel, n, step, 1.0f),
              PERSEUS_OK);
    std::vector<float> full(numel);
    ASSERT_EQ(perseus_downsample_scatter(sent.data(), full.data(), 4, numel, n, step, 1), PERSEUS_OK);
    for (uint64_t i = 0; i < numel; ++i) {
      total_sent[i] += full[i];
      total_grad[i] += grad[i];
    }
  }
  // after n steps element i was last sent at step i % n; what it got since is in the residual
  for (uint64_t i = 0; i < numel; ++i) EXPECT_EQ(total_sent[i] + residual[i], total_grad[i]) << i;
}

TEST(Downsample, BadArgumentsAreRefused) {
  float a[4] = {0}, b[4] = {0}, r[4] = {0};
  EXPECT_EQ(perseus_downsample_gather(a, b, 4, 4, 0, 0), PERSEUS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(perseus_last_error()).find("PERSEUS_DOWNSAMPLE_N_ELEMENTS"), std::string::npos);
  EXPECT_EQ(perseus_downsample_gather(a, b, 3, 4, 2, 0), PERSEUS_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(perseus_downsample_gather_momentum(a, r, b, 4, 2, 0, INFINITY), PERSEUS_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(perseus_last_error()).find("PERSEUS_GRADIENT_MOMENTUM"), std::string::npos);
}

}  // namespace
