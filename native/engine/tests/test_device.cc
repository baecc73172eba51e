// Device buffers without a device: the NCCL library of PyPI's nvidia-nccl-cu12 wheel (recipes/nccl/fetch.sh,
// its folder in PERSEUS_NCCL_SITE, set by CMake) loaded and its version read, the NCCL unique id exchanged
// through the engine's store among two ranks, the no-device error, the device field on the negotiation wire.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <unistd.h>

#include "cuda_loader.h"
#include "device_backend.h"
#include "errors.h"
#include "nccl_loader.h"
#include "negotiation.h"
#include "tcp_store.h"

using namespace perseus::engine;
using namespace std::chrono_literals;

namespace {

std::string site() {
  const char* s = std::getenv("PERSEUS_NCCL_SITE");
  return s ? s : "";
}

Nccl& wheel_nccl() {
  if (site().empty()) ADD_FAILURE() << "PERSEUS_NCCL_SITE is not set: run this test through ctest";
  add_library_dir(site());
  return Nccl::get();
}

}  // namespace

TEST(NcclLoader, LoadsTheWheelsLibraryAndReadsItsVersion) {
  Nccl& nccl = wheel_nccl();
  ASSERT_TRUE(nccl.available()) << nccl.why_not();
  EXPECT_EQ(nccl.version(), 22105);  // recipes/nccl/fetch.sh pins nvidia-nccl-cu12 2.21.5
  EXPECT_EQ(nccl.path(), site() + "/nvidia/nccl/lib/libnccl.so.2");
}

TEST(NcclLoader, AMissingLibraryListsWhereItLooked) {
  setenv("PERSEUS_TEST_NCCL_ABSENT", "/nonexistent/libnccl.so.2", 1);
  Loaded lib = load_nvidia_library("PERSEUS_TEST_NCCL_ABSENT", {"nccl"}, {"libnccl.so.2"});
  EXPECT_EQ(lib.handle, nullptr);
  ASSERT_EQ(lib.tried.size(), 1u);
  EXPECT_NE(lib.tried[0].find("PERSEUS_TEST_NCCL_ABSENT=/nonexistent/libnccl.so.2"), std::string::npos) << lib.tried[0];
  Loaded none = load_nvidia_library("PERSEUS_TEST_UNSET_VARIABLE", {"no_such_package"}, {"libno_such_nvidia.so.1"});
  EXPECT_EQ(none.handle, nullptr);
  EXPECT_GE(none.tried.size(), 2u);  // the site folders, then the system's search
}

// CUDA 13's wheels put the runtime under nvidia/cu13/lib, CUDA 12's under nvidia/cuda_runtime/lib: every package
// folder named is searched, in order (a link to the wheel's NCCL under a name no loaded library has).
TEST(NvidiaLibraryLoader, SearchesEachPackageFolderInOrder) {
  char tmpl[] = "/tmp/perseus_dl_search_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string root = tmpl;
  const std::string lib_dir = root + "/nvidia/cu13/lib";
  ASSERT_EQ(std::system(("mkdir -p " + lib_dir).c_str()), 0);
  const std::string link = lib_dir + "/libperseus_test_second.so";
  ASSERT_EQ(symlink((site() + "/nvidia/nccl/lib/libnccl.so.2").c_str(), link.c_str()), 0);
  add_library_dir(root);
  Loaded lib = load_nvidia_library("PERSEUS_TEST_UNSET_VARIABLE", {"cuda_runtime", "cu13"}, {"libperseus_test_second.so"});
  EXPECT_NE(lib.handle, nullptr);
  EXPECT_EQ(lib.path, link);
  std::system(("rm -rf " + root).c_str());
}

// ncclGetUniqueId needs no GPU (it opens NCCL's bootstrap socket): rank 0 makes it, the store carries it.
TEST(NcclUniqueId, TwoRanksGetTheSameIdThroughTheStore) {
  ASSERT_TRUE(wheel_nccl().available()) << Nccl::get().why_not();
  TcpStoreServer server("127.0.0.1", 0);
  ncclUniqueId ids[2];
  std::string errors[2];
  std::thread ranks[2];
  for (int r = 0; r < 2; ++r) {
    ranks[r] = std::thread([&, r] {
      try {
        TcpStore store("127.0.0.1", server.port(), 10s);
        ids[r] = exchange_unique_id(store, "perseus/device/test/0/nccl-id", r == 0, 10s);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  ASSERT_EQ(errors[0], "");
  ASSERT_EQ(errors[1], "");
  EXPECT_EQ(std::memcmp(ids[0].internal, ids[1].internal, sizeof(ids[0].internal)), 0);
  ncclUniqueId zero;
  std::memset(&zero, 0, sizeof(zero));
  EXPECT_NE(std::memcmp(ids[0].internal, zero.internal, sizeof(zero.internal)), 0);

  // another communicator: a fresh id under its own key
  TcpStore store("127.0.0.1", server.port(), 10s);
  ncclUniqueId other = exchange_unique_id(store, "perseus/device/test/1/nccl-id", true, 10s);
  EXPECT_NE(std::memcmp(other.internal, ids[0].internal, sizeof(other.internal)), 0);
}

TEST(NcclUniqueId, ARootsErrorReachesTheOtherRanks) {
  TcpStoreServer server("127.0.0.1", 0);
  TcpStore root("127.0.0.1", server.port(), 5s), other("127.0.0.1", server.port(), 5s);
  std::string message = "perseus engine: ncclGetUniqueId failed: unhandled system error";
  root.set("k", std::vector<char>(message.begin(), message.end()));  // not the id format: corrupt
  EXPECT_THROW(exchange_unique_id(other, "k", false, 5s), EngineError);
  std::string published = "error:" + message;
  root.set("k2", std::vector<char>(published.begin(), published.end()));
  try {
    exchange_unique_id(other, "k2", false, 5s);
    FAIL() << "no error";
  } catch (const EngineError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(CudaRuntime, NoDeviceFailsWithOneClearMessage) {
  add_library_dir(site());
  auto count = CudaRuntime::get().device_count();
  if (count.count > 0) GTEST_SKIP() << "a CUDA device is visible: the no-device message is for machines without one";
  try {
    check_device(0);
    FAIL() << "check_device(0) passed without a device";
  } catch (const EngineError& e) {
    EXPECT_EQ(e.status(), PERSEUS_ENGINE_UNSUPPORTED);
    EXPECT_EQ(std::string(e.what()).rfind("not supported: no CUDA device visible (cudaGetDeviceCount=", 0), 0u) << e.what();
  }
}

TEST(Negotiation, TheDeviceTravelsAndAHostDeviceMixIsAMismatch) {
  Announcement a;
  Request r;
  r.name = "g";
  r.shape = {4};
  r.device = 3;
  a.requests.push_back(r);
  Announcement b = decode(encode(a));
  ASSERT_EQ(b.requests.size(), 1u);
  EXPECT_EQ(b.requests[0].device, 3);
  Request other_device = r, host = r;
  other_device.device = 0;  // each rank names its own device: not a mismatch
  host.device = -1;
  EXPECT_EQ(check_match({r, other_device}), "");
  std::string message = check_match({r, host});
  EXPECT_NE(message.find("of a device buffer"), std::string::npos) << message;
}

namespace {
bool only_lo_and_ib0(const std::string& name) { return name == "lo" || name == "ib0"; }
bool with_eth0(const std::string& name) { return name == "lo" || name == "eth0"; }
}  // namespace

// PERSEUS_NCCL_NETWORK_INTERFACE reaches NCCL as NCCL_SOCKET_IFNAME; the user's own NCCL_SOCKET_IFNAME wins; the
// manual's eth0 default applies only where eth0 exists; an interface the machine lacks is refused by name.
TEST(NcclSocketInterface, ThePerseusVariableTheUsersNcclVariableAndTheEth0Default) {
  EXPECT_EQ(nccl_socket_interface(nullptr, "ib0", &only_lo_and_ib0), "ib0");
  EXPECT_EQ(nccl_socket_interface("bond0", "ib0", &only_lo_and_ib0), "");
  EXPECT_EQ(nccl_socket_interface(nullptr, nullptr, &with_eth0), "eth0");
  EXPECT_EQ(nccl_socket_interface(nullptr, "", &only_lo_and_ib0), "");
  try {
    nccl_socket_interface(nullptr, "eth7", &only_lo_and_ib0);
    FAIL() << "an interface this machine lacks was accepted";
  } catch (const EngineError& e) {
    EXPECT_NE(std::string(e.what()).find("PERSEUS_NCCL_NETWORK_INTERFACE=eth7"), std::string::npos) << e.what();
  }
}
