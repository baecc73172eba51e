// Engine::run_device: a collective on a CUDA device buffer, on the stream the agreed order gave it
// (device_backend.h: NCCL, or Gloo with host staging). Built with -DPERSEUS_ENGINE_DEVICE=ON.
#include "device_backend.h"
#include "engine.h"
#include "errors.h"

namespace perseus::engine {

void Engine::run_device(Stream& s, const std::shared_ptr<Op>& op) {
  s.pipeline->drain();  // the host-staged path talks on the stream's Gloo groups, as the pipeline does
  perseus_engine_status refused;
  std::string why;
  if (refused_after_failure(refused, why)) {
    op->finish(refused, why);
    return;
  }
  const Request& r = op->request;
  try {
    std::shared_ptr<DeviceBackend> backend;
    {
      std::lock_guard<std::mutex> lock(device_mu_);
      if (!device_backend_) {
        // its own connection to the store: its waits never hold up the negotiation thread's store calls
        const auto timeout = std::chrono::milliseconds(int64_t(options_.timeout_seconds) * 1000);
        std::unique_ptr<TcpStore> store;
        if (store_) store = std::make_unique<TcpStore>(options_.master_addr, server_ ? server_->port() : options_.master_port, timeout);
        device_backend_ = std::make_shared<DeviceBackend>(std::move(store), options_.rank, options_.size, timeout);
      }
      backend = device_backend_;
    }
    DeviceJob job;
    job.data = op->data;
    job.device = r.device;
    job.dtype = r.dtype;
    job.n = numel(r.shape);
    job.allreduce = r.kind == Kind::kAllreduce;
    job.average = r.op == PERSEUS_ENGINE_AVERAGE;
    job.root = r.root;
    uint64_t issued = 0;
    const bool nancheck = options_.nancheck != 0 && job.allreduce && r.dtype == PERSEUS_ENGINE_FLOAT32;
    const uint64_t nonfinite = backend->run(s.groups, policy_, job, nancheck, s.half, issued);
    collectives_ += issued;
    if (nancheck && nonfinite > 0) {
      op->finish(PERSEUS_ENGINE_NONFINITE, "PERSEUS_ALLREDUCE_NANCHECK: the reduced result of '" + r.name +
                                               "' is not finite (inf or NaN) in " + std::to_string(nonfinite) +
                                               " element(s): lower PERSEUS_ALLREDUCE_GRADIENT_SCALE or find the layer "
                                               "that produces it");
      return;
    }
  } catch (const std::exception& e) {
    // a CUDA, NCCL or transport failure leaves the ranks out of step: the engine stops, as for Gloo's
    fail_collective(*op, e.what());
    return;
  }
  op->finish(PERSEUS_ENGINE_OK, "");
}

}  // namespace perseus::engine
