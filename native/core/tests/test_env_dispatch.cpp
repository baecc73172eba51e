// PERSEUS_CPU_DISPATCH (set by ctest for this executable) forces a path, or fails loudly.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "perseus/core.h"

TEST(EnvDispatch, ForcedPathIsUsedOrRefusedWithTheVariableName) {
  const char* env = std::getenv("PERSEUS_CPU_DISPATCH");
  ASSERT_NE(env, nullptr) << "run through ctest, which sets PERSEUS_CPU_DISPATCH";
  const std::string wanted = env;
  const float src[3] = {1, 2, 3};
  uint16_t dst[3] = {0, 0, 0};
  const perseus_status status = perseus_compress(src, dst, PERSEUS_FLOAT16, 3, 1.0f, nullptr);
  if (wanted == "bogus") {
    EXPECT_EQ(status, PERSEUS_ERR_INVALID_ARGUMENT);
    EXPECT_NE(std::string(perseus_last_error()).find("PERSEUS_CPU_DISPATCH='bogus'"), std::string::npos)
        << perseus_last_error();
    EXPECT_EQ(dst[0], 0);
    // the API can still repair it
    EXPECT_EQ(perseus_set_dispatch("scalar"), PERSEUS_OK);
    EXPECT_EQ(perseus_compress(src, dst, PERSEUS_FLOAT16, 3, 1.0f, nullptr), PERSEUS_OK);
    EXPECT_EQ(dst[0], 0x3c00);
  } else {
    EXPECT_EQ(status, PERSEUS_OK) << perseus_last_error();
    EXPECT_EQ(std::string(perseus_dispatch_name()), wanted);
    EXPECT_EQ(dst[2], 0x4200);
  }
}
