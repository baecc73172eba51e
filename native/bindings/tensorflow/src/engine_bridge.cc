#include "engine_bridge.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <list>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

namespace perseus_tf {
namespace {

std::atomic<perseus_engine*> g_engine{nullptr};
std::mutex g_sets_mutex;
std::map<int, perseus_engine*> g_sets;  // process set id -> its engine on this rank (members only)

struct Pending {
  perseus_engine* engine;
  perseus_engine_handle handle;
  Completion completion;
};

// One thread polls every pending collective; it sleeps while there is none. Never destroyed (a
// detached thread outliving static destructors at exit is harmless; joining one could hang).
class Completer {
 public:
  Completer() { std::thread([this] { run(); }).detach(); }

  void add(Pending pending) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      incoming_.push_back(std::move(pending));
    }
    wake_.notify_one();
  }

 private:
  void run() {
    std::list<Pending> active;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        if (active.empty()) wake_.wait(lock, [this] { return !incoming_.empty(); });
        active.splice(active.end(), incoming_);
      }
      bool progressed = false;
      for (auto it = active.begin(); it != active.end();) {
        const perseus_engine_status status = perseus_engine_poll(it->engine, it->handle);
        if (status == PERSEUS_ENGINE_PENDING) {
          ++it;
          continue;
        }
        const std::string message = status == PERSEUS_ENGINE_OK ? std::string() : engine_error("collective", status);
        it->completion(status, message);
        perseus_engine_release(it->engine, it->handle);
        it = active.erase(it);
        progressed = true;
      }
      if (!progressed && !active.empty()) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::list<Pending> incoming_;
};

Completer& completer() {
  static Completer* instance = new Completer();
  return *instance;
}

}  // namespace

perseus_engine* current_engine() { return g_engine.load(std::memory_order_acquire); }

perseus_engine* process_set_engine(int process_set_id) {
  if (process_set_id == 0) return current_engine();
  std::lock_guard<std::mutex> lock(g_sets_mutex);
  const auto found = g_sets.find(process_set_id);
  return found == g_sets.end() ? nullptr : found->second;
}

void complete_async(perseus_engine* engine, perseus_engine_handle handle, Completion completion) {
  completer().add(Pending{engine, handle, std::move(completion)});
}

std::string engine_error(const char* what, perseus_engine_status status) {
  const char* detail = perseus_engine_last_error();
  return std::string("perseus.tensorflow ") + what + " failed (" + perseus_engine_status_string(status) +
         "): " + (detail && *detail ? detail : "no message");
}

}  // namespace perseus_tf

extern "C" void perseus_tf_set_engine(perseus_engine* engine) {
  perseus_tf::g_engine.store(engine, std::memory_order_release);
}

extern "C" void perseus_tf_set_process_set_engine(int process_set_id, perseus_engine* engine) {
  if (process_set_id <= 0) return;  // the global set's engine is perseus_tf_set_engine's
  std::lock_guard<std::mutex> lock(perseus_tf::g_sets_mutex);
  if (engine == nullptr) {
    perseus_tf::g_sets.erase(process_set_id);
  } else {
    perseus_tf::g_sets[process_set_id] = engine;
  }
}
