// Options: defaults, the environment, validation messages that name the variable and the fix.
#include <gtest/gtest.h>

#include <cstdlib>

#include "errors.h"
#include "options.h"
#include "perseus/variables.h"

using namespace perseus::engine;

namespace {
struct EnvGuard {
  explicit EnvGuard(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~EnvGuard() { unsetenv(name_); }
  const char* name_;
};

std::string error_of(void (*f)(perseus_engine_options*), perseus_engine_options* o) {
  try {
    f(o);
  } catch (const EngineError& e) {
    EXPECT_EQ(e.status(), PERSEUS_ENGINE_INVALID_ARGUMENT);
    return e.what();
  }
  return "";
}
}  // namespace

TEST(Options, EnvironmentFillsThePolicy) {
  perseus_engine_options o;
  default_options(&o);
  EXPECT_EQ(o.wire_dtype, 0);
  EXPECT_EQ(o.timeout_seconds, 60);
  EnvGuard a("PERSEUS_ALLREDUCE_DTYPE", "2"), b("GLOO_TIMEOUT_SECONDS", "7"), c("PERSEUS_ALLREDUCE_STREAMS", "3"),
      d("GLOO_SOCKET_IFNAME", "eth9");
  options_from_env(&o);
  EXPECT_EQ(o.wire_dtype, 2);
  EXPECT_EQ(o.timeout_seconds, 7);
  EXPECT_EQ(o.streams, 3);
  EXPECT_STREQ(o.iface, "eth9");
}

TEST(Options, BadValuesNameTheVariable) {
  perseus_engine_options o;
  default_options(&o);
  {
    EnvGuard g("PERSEUS_ALLREDUCE_DTYPE", "3");
    std::string m = error_of(options_from_env, &o);
    EXPECT_NE(m.find("PERSEUS_ALLREDUCE_DTYPE='3'"), std::string::npos) << m;
  }
  {
    EnvGuard g("GLOO_TIMEOUT_SECONDS", "soon");
    EXPECT_NE(error_of(options_from_env, &o).find("GLOO_TIMEOUT_SECONDS"), std::string::npos);
  }
}

// A bad value's message says what the declaration accepts, in its words (PERSEUS_ACCEPTS_*, generated from
// perseus.config), and the engine takes every value the declaration takes (a timeout has no maximum there).
TEST(Options, BadValuesSayWhatTheDeclarationAccepts) {
  perseus_engine_options o;
  default_options(&o);
  const struct { const char* name; const char* value; const char* accepts; } cases[] = {
      {"PERSEUS_ALLREDUCE_DTYPE", "3", PERSEUS_ACCEPTS_ALLREDUCE_DTYPE},
      {"PERSEUS_ALLREDUCE_MODE", "2", PERSEUS_ACCEPTS_ALLREDUCE_MODE},
      {"PERSEUS_ALLREDUCE_STREAMS", "13", PERSEUS_ACCEPTS_ALLREDUCE_STREAMS},
      {"PERSEUS_ALLREDUCE_FUSION", "129", PERSEUS_ACCEPTS_ALLREDUCE_FUSION},
      {"PERSEUS_ALLREDUCE_NANCHECK", "2", PERSEUS_ACCEPTS_ALLREDUCE_NANCHECK},
      {"PERSEUS_ALLREDUCE_GRADIENT_SCALE", "0", PERSEUS_ACCEPTS_ALLREDUCE_GRADIENT_SCALE},
      {"PERSEUS_CYCLE_TIME_MS", "-1", PERSEUS_ACCEPTS_CYCLE_TIME_MS},
      {"PERSEUS_OFFLINE_NEG", "on", PERSEUS_ACCEPTS_OFFLINE_NEG},
      {"PERSEUS_SHM_DISABLE", "2", PERSEUS_ACCEPTS_SHM_DISABLE},
      {"GLOO_TIMEOUT_SECONDS", "0", PERSEUS_ACCEPTS_GLOO_TIMEOUT_SECONDS},
  };
  for (const auto& c : cases) {
    EnvGuard g(c.name, c.value);
    std::string m = error_of(options_from_env, &o);
    EXPECT_NE(m.find(std::string(c.name) + "='" + c.value + "' is not valid: it accepts " + c.accepts),
              std::string::npos) << m;
  }
  EnvGuard long_timeout("GLOO_TIMEOUT_SECONDS", "100000");
  options_from_env(&o);
  EXPECT_EQ(o.timeout_seconds, 100000);
}

// Every alias perseus.config declares (PERSEUS_ENV_ALIASES) works as its variable does: set alone it is read,
// a bad value is named by the spelling that was set, and the declared name wins when both are set.
TEST(Options, EveryAliasIsReadAsItsVariable) {
#define PERSEUS_CHECK_ALIAS(NAME, ALIAS)                                                    \
  {                                                                                         \
    Setting unset = setting(NAME);                                                          \
    EXPECT_EQ(unset.value, nullptr) << NAME;                                                \
    {                                                                                       \
      EnvGuard g(ALIAS, "1");                                                               \
      Setting s = setting(NAME);                                                            \
      EXPECT_STREQ(s.name, ALIAS);                                                          \
      ASSERT_NE(s.value, nullptr);                                                          \
      EXPECT_STREQ(s.value, "1");                                                           \
      EnvGuard both(NAME, "0");                                                             \
      EXPECT_STREQ(setting(NAME).name, NAME);                                               \
      EXPECT_STREQ(setting(NAME).value, "0");                                               \
    }                                                                                       \
  }
  PERSEUS_ENV_ALIASES(PERSEUS_CHECK_ALIAS)
#undef PERSEUS_CHECK_ALIAS
  perseus_engine_options o;
  default_options(&o);
  {
    EnvGuard g("PERSEUS_ALLREDUCE_NANHECK", "1");  // the manual's spelling
    options_from_env(&o);
    EXPECT_EQ(o.nancheck, 1);
  }
  {
    EnvGuard g("PERSEUS_ALLREDUCE_NANHECK", "yes");
    std::string m = error_of(options_from_env, &o);
    EXPECT_NE(m.find("PERSEUS_ALLREDUCE_NANHECK='yes'"), std::string::npos) << m;
  }
}

TEST(Options, ValidationRefusesInconsistentNumbers) {
  perseus_engine_options o;
  default_options(&o);
  o.size = 2;
  o.rank = 2;
  try {
    validate_options(o);
    FAIL() << "rank 2 of 2 accepted";
  } catch (const EngineError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 2 is outside 0..1"), std::string::npos) << e.what();
  }
  o.rank = 1;
  o.master_port = 0;
  EXPECT_THROW(validate_options(o), EngineError);  // a 2-rank job needs PERSEUS_MASTER_PORT
  o.master_port = 12345;
  o.mode = 0;
  o.wire_dtype = 2;
  EXPECT_THROW(validate_options(o), EngineError);  // DTYPE=2 needs two levels
  o.mode = -1;
  validate_options(o);
}

TEST(Options, TheStorePerseusrunServesIsJoined) {
  perseus_engine_options o;
  default_options(&o);
  {
    EnvGuard a("PERSEUS_STORE_ADDR", "10.0.0.5:41234");
    options_from_env(&o);
  }
  EXPECT_STREQ(o.master_addr, "10.0.0.5");
  EXPECT_EQ(o.master_port, 41234);
  EXPECT_EQ(o.serve_store, 0);
  EnvGuard b("PERSEUS_STORE_ADDR", "10.0.0.5");
  EXPECT_NE(error_of(options_from_env, &o).find("PERSEUS_STORE_ADDR='10.0.0.5' is not HOST:PORT"), std::string::npos);
}

// Options by name (the C ABI's perseus_engine_options_set/_get): a field or its variable's name, the variable's rule.
TEST(Options, SetAndReadByName) {
  perseus_engine_options o;
  default_options(&o);
  set_option(&o, "wire_dtype", "2");
  EXPECT_EQ(o.wire_dtype, 2);
  set_option(&o, "PERSEUS_ALLREDUCE_GRADIENT_SCALE", "0.5");
  EXPECT_EQ(option_text(o, "gradient_scale"), "0.5");
  set_option(&o, "rank", "3");
  set_option(&o, "master_addr", "10.1.2.3");
  EXPECT_EQ(option_text(o, "rank"), "3");
  EXPECT_EQ(option_text(o, "master_addr"), "10.1.2.3");
  EXPECT_EQ(o.stream_tuning, 1);
  set_option(&o, "streams", "2");  // a count the caller chose is used as it is
  EXPECT_EQ(o.stream_tuning, 0);
  try {
    set_option(&o, "wire_dtype", "7");
    FAIL() << "wire_dtype 7 accepted";
  } catch (const EngineError& e) {
    EXPECT_NE(std::string(e.what()).find(std::string("wire_dtype (PERSEUS_ALLREDUCE_DTYPE)='7' is not valid: it accepts ") +
                                         PERSEUS_ACCEPTS_ALLREDUCE_DTYPE),
              std::string::npos) << e.what();
  }
  try {
    set_option(&o, "wire_dtpye", "1");
    FAIL() << "an unknown option accepted";
  } catch (const EngineError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown engine option 'wire_dtpye': the options are rank, size"),
              std::string::npos) << e.what();
  }
}

// Every option the declaration gives the engine is listed with its variable, and reads back its default.
TEST(Options, EveryDeclaredOptionIsListedWithItsVariable) {
  perseus_engine_options o;
  default_options(&o);
  int declared = 0;
  for (const auto& n : option_names()) {
    EXPECT_NO_THROW(option_text(o, n.field)) << n.field;
    if (n.variable != nullptr) {
      ++declared;
      EXPECT_EQ(option_text(o, n.field), option_text(o, n.variable)) << n.field;
    }
  }
#define PERSEUS_COUNT(...) +1
  EXPECT_EQ(declared, 0 PERSEUS_ENGINE_INT_OPTIONS(PERSEUS_COUNT) PERSEUS_ENGINE_REAL_OPTIONS(PERSEUS_COUNT)
                          PERSEUS_ENGINE_TEXT_OPTIONS(PERSEUS_COUNT));
#undef PERSEUS_COUNT
  EXPECT_EQ(option_text(o, "PERSEUS_ALLREDUCE_STREAMS"), std::to_string(PERSEUS_DEFAULT_ALLREDUCE_STREAMS));
  EXPECT_EQ(option_text(o, "mode"), "-1");  // declared without a default: the engine's automatic choice
}

// An empty value unsets an option, as an empty variable does: its declared default or the automatic choice.
TEST(Options, AnEmptyValueUnsets) {
  perseus_engine_options o;
  default_options(&o);
  set_option(&o, "fusion", "8");
  set_option(&o, "fusion", "");
  EXPECT_EQ(o.fusion, -1);
  set_option(&o, "gradient_scale", "2");
  set_option(&o, "PERSEUS_ALLREDUCE_GRADIENT_SCALE", "");
  EXPECT_EQ(o.gradient_scale, PERSEUS_DEFAULT_ALLREDUCE_GRADIENT_SCALE);
}
