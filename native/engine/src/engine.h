// The engine: rendezvous, the Gloo groups of every stream, the negotiation thread that agrees the
// order of collectives across ranks each cycle, and one worker thread per stream that runs them.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <signal.h>
#include <string>
#include <thread>
#include <vector>

#include "group.h"
#include "negotiation.h"
#include "offline.h"
#include "options.h"
#include "pipeline.h"
#include "plan.h"
#include "stream_tuner.h"
#include "perseus/engine.h"
#include "tcp_store.h"
#include "wire.h"

namespace perseus::engine {

// A write to a peer that closed raises SIGPIPE in the writing thread; the engine's threads block it
// (engine_rendezvous.cc). `previous` receives the mask before, when not null.
void block_sigpipe(sigset_t* previous = nullptr);

class DeviceBackend;  // device_backend.h

// One submitted collective.
struct Op {
  Request request;
  int64_t sequence = 0;        // submission order on this rank (its handle)
  void* data = nullptr;        // allreduce/broadcast: in place
  const void* input = nullptr; // allgather
  // completion
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  perseus_engine_status status = PERSEUS_ENGINE_OK;
  std::string error;
  std::atomic<int> parts_left{1};  // fused slices still running
  // allgather result
  std::vector<int64_t> first_dims;
  std::vector<char> gathered;

  void finish(perseus_engine_status s, const std::string& message);  // first failure wins
  void part_done(perseus_engine_status s, const std::string& message);
};

// One fused group of fp32 allreduces in a stream's pipeline (engine_pipeline.cc).
struct FusedSlice {
  std::shared_ptr<std::vector<std::shared_ptr<Op>>> ops;
  std::shared_ptr<std::vector<Unit>> units;
  int reduce_op = 0;
  std::function<void()> on_done;  // the stream tuner's clock
  bool in_place = false;
  bool failed = false;  // the remaining steps are skipped
  perseus_engine_status status = PERSEUS_ENGINE_OK;
  std::string message;
  std::vector<float> fusion;  // scratch of the slot, kept between slices
  WireSlice wire;
};

class Engine {
 public:
  explicit Engine(const perseus_engine_options& options);
  ~Engine();  // shutdown() then join

  int64_t submit(Request request, void* data, const void* input);
  std::shared_ptr<Op> find(int64_t handle);
  void release(int64_t handle);
  // Asks every rank to stop after the current cycle; joins the threads. Idempotent.
  void shutdown();
  perseus_engine_info info();
  // Payload bytes (and collectives) of one engine dtype this rank handed to Gloo on a level: "all" (one
  // level), "node", "leaders" (between nodes in two levels; summed over the streams) or "control".
  void wire_bytes(const std::string& level, int dtype, uint64_t& bytes, uint64_t& calls);
  // The first communication failure ("" if none).
  std::string failure();

 private:
  struct Stream {
    StreamGroups groups;
    std::thread thread;
    std::mutex mu;
    std::condition_variable cv;
    std::deque<std::function<void()>> queue;
    bool stop = false;
    std::unique_ptr<Pipeline> pipeline;  // the fp32 allreduce steps, one stage each
    std::vector<FusedSlice> slices;      // one per pipeline slot
    std::vector<std::string> stage_names;
    std::vector<uint16_t> half;          // scratch of run_device (engine_device.cc)
    int index = 0;
  };

  void rendezvous();
  void negotiate_loop();
  // PERSEUS_OFFLINE_NEG (engine_offline.cc): one step of the offline loop (false: the loop ends)
  bool offline_cycle();
  bool next_batch_submitted() const;  // mu_ held
  bool run_next_batch(std::chrono::steady_clock::time_point deadline);
  bool shutdown_requested();
  bool renegotiate(bool shutdown, const std::string& off_plan);
  void deviate(const std::string& what);
  bool poll_abort();
  std::string abort_after_failure();  // a stream's collective failed: another rank's deviation, if any
  // An earlier collective broke the engine: true, with the status and message a collective about to run
  // gets instead (the offline plan's deviation when a rank left it, else the first failure).
  bool refused_after_failure(perseus_engine_status& status, std::string& message);
  void dispatch(std::vector<Agreed>& ready);
  void enqueue(std::function<void(Stream&)> task, int streams);
  void agree_streams();  // the stream tuner's decision, the same on every rank
  void stream_loop(Stream& s);
  void print_profile(const Stream& s) const;  // PERSEUS_ENGINE_PROFILE=1: the stages' busy times, on stderr
  // engine_pipeline.cc: the stages of a stream's pipeline, and handing a fused group to it
  std::unique_ptr<Pipeline> make_pipeline(Stream& s);
  void run_allreduce_fp32(Stream& s, std::shared_ptr<std::vector<std::shared_ptr<Op>>> ops,
                          std::shared_ptr<std::vector<Unit>> units, int reduce_op, std::function<void()> on_done);
  void begin_slice(FusedSlice& f);
  void run_step(FusedSlice& f, const WireStep& step);
  void end_slice(FusedSlice& f);
  void fail_slice(FusedSlice& f, perseus_engine_status status, const std::string& message);
  void run_single(Stream& s, const std::shared_ptr<Op>& op, const Agreed& agreed);
  void run_device(Stream& s, const std::shared_ptr<Op>& op);  // engine_device.cc: a CUDA device buffer
  std::vector<std::string> stalled();  // rank 0: pending longer than the timeout
  void apply_aborts(const std::vector<std::string>& names);
  void fail_pending(perseus_engine_status status, const std::string& message);
  void set_failure(const std::string& message);
  std::string collective_error(const Request& r, const std::string& what) const;
  // a collective that threw: the engine stops (or reports the rank's deviation) and the op fails
  void fail_collective(Op& op, const std::string& what);

  perseus_engine_options options_;
  int num_nodes_ = 1, node_ = 0, local_rank_ = 0, local_size_ = 1;
  WirePolicy policy_;
  std::unique_ptr<TcpStoreServer> server_;
  std::unique_ptr<TcpStore> store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::unique_ptr<Group> control_;
  std::vector<std::unique_ptr<Stream>> streams_;
  size_t next_stream_ = 0;
  std::unique_ptr<StreamTuner> tuner_;
  Table table_;
  std::map<std::string, std::chrono::steady_clock::time_point> first_seen_;  // rank 0: the stall clock

  std::mutex mu_;  // guards everything below
  std::condition_variable submitted_cv_;
  std::vector<std::shared_ptr<Op>> submitted_;           // not yet announced
  std::map<std::string, std::shared_ptr<Op>> announced_; // announced, not yet agreed
  std::map<int64_t, std::shared_ptr<Op>> handles_;
  std::map<std::string, int64_t> in_flight_names_;
  int64_t next_handle_ = 1;
  bool shutdown_requested_ = false;
  bool stopped_ = false;
  std::string failure_;

  std::atomic<uint64_t> collectives_{0}, fused_groups_{0}, cycles_{0};

  // PERSEUS_OFFLINE_NEG: the learner (negotiation thread only), then the plan
  std::unique_ptr<PlanLearner> learner_;
  std::unique_ptr<OfflinePlan> offline_;
  std::atomic<bool> offline_active_{false};
  std::atomic<uint64_t> offline_batches_{0}, renegotiations_{0};
  std::atomic<int> plan_collectives_{0};
  bool waiting_ = false;  // offline: a submission waits for the plan's next batch since waiting_since_
  std::chrono::steady_clock::time_point waiting_since_, last_abort_poll_;
  bool abort_poll_off_ = false;
  std::string offline_abort_;  // guarded by mu_
  std::thread negotiator_;
  bool joined_ = false;
  std::mutex device_mu_;
  std::shared_ptr<DeviceBackend> device_backend_;  // made by the first device collective
};

}  // namespace perseus::engine
