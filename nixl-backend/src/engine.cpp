#include "engine.hpp"
#include "options.hpp"

#include <loom/gpu/cuda.hpp>
#include <loom/plugins/log.hpp>

#include <vector>

namespace loom::nixl_backend {
namespace {

/// Runs `f`, turning what escapes it into NIXL's status (nothing crosses the ABI).
template <class F>
auto guarded(const char* what, F&& f) noexcept -> nixl_status_t {
    try {
        return f();
    } catch (const std::exception& e) {
        LOOM_LOG(spdlog::level::err, "nixl {}: {}", what, e.what());
    } catch (...) {
        LOOM_LOG(spdlog::level::err, "nixl {}: unknown exception", what);
    }
    return NIXL_ERR_BACKEND;
}

auto status(const void_result& r) -> nixl_status_t { return r ? NIXL_SUCCESS : status_of(r.error()); }
auto status(const result<plugins::transfer_state>& s) -> nixl_status_t {
    if (!s) return status_of(s.error());
    return *s == plugins::transfer_state::done ? NIXL_SUCCESS : NIXL_IN_PROG;
}

/// A VRAM_SEG descriptor's devId must be the CUDA device that holds its address.
auto check_device_of(const nixlBlobDesc& mem) -> nixl_status_t {
    auto cuda = gpu::cuda_driver::instance();
    if (!cuda) return NIXL_ERR_NOT_SUPPORTED;
    auto where = (*cuda)->pointer_info(reinterpret_cast<const void*>(mem.addr));
    if (!where || where->type != gpu::memory_type::device || where->device < 0 ||
        static_cast<std::uint64_t>(where->device) != mem.devId) {
        LOOM_LOG(spdlog::level::err, "nixl registerMem: VRAM at {:#x} is not memory of CUDA device {}", mem.addr,
                 mem.devId);
        return NIXL_ERR_INVALID_PARAM;
    }
    return NIXL_SUCCESS;
}

auto is_memory_type(nixl_mem_t t) -> bool { return t == DRAM_SEG || t == VRAM_SEG; }

}  // namespace

auto status_of(std::error_code e) noexcept -> nixl_status_t {
    if (!e) return NIXL_SUCCESS;
    if (e.category() != loom::fabric_category()) return NIXL_ERR_BACKEND;
    switch (static_cast<errc>(e.value())) {
        case errc::invalid_argument:
        case errc::message_too_long:
        case errc::bad_address: return NIXL_ERR_INVALID_PARAM;
        case errc::no_entry: return NIXL_ERR_NOT_FOUND;
        case errc::busy: return NIXL_ERR_REPOST_ACTIVE;
        case errc::not_supported: return NIXL_ERR_NOT_SUPPORTED;
        case errc::canceled: return NIXL_ERR_CANCELED;
        case errc::not_connected:
        case errc::connection_aborted:
        case errc::connection_reset:
        case errc::connection_refused:
        case errc::host_unreachable:
        case errc::host_down:
        case errc::shutdown:
        case errc::timed_out:
        case errc::io_error: return NIXL_ERR_REMOTE_DISCONNECT;
        default: return NIXL_ERR_BACKEND;
    }
}

engine::engine(const nixlBackendInitParams* params) : nixlBackendEngine(params) {
    auto opts = parse_options(*params);
    if (!opts) {
        LOOM_LOG(spdlog::level::err, "nixl LOOM backend: {}", opts.error());
        initErr = true;
        return;
    }
    auto a = plugins::transfer_agent::create(std::move(*opts));
    if (!a) {
        LOOM_LOG(spdlog::level::err, "nixl LOOM backend: no transfer agent: {}", a.error().message());
        initErr = true;
        return;
    }
    agent_ = std::move(*a);
}

engine::~engine() = default;

nixl_mem_list_t engine::getSupportedMems() const {
    if (agent_ != nullptr && agent_->supports_memory(gpu::memory_kind::cuda)) return {DRAM_SEG, VRAM_SEG};
    return {DRAM_SEG};
}

nixl_status_t engine::registerMem(const nixlBlobDesc& mem, const nixl_mem_t& nixl_mem, nixlBackendMD*& out) {
    return guarded("registerMem", [&] {
        if (nixl_mem != DRAM_SEG && nixl_mem != VRAM_SEG) return NIXL_ERR_NOT_SUPPORTED;
        if (mem.addr == 0 || mem.len == 0) return NIXL_ERR_INVALID_PARAM;
        const auto kind = nixl_mem == VRAM_SEG ? gpu::memory_kind::cuda : gpu::memory_kind::host;
        if (nixl_mem == VRAM_SEG) {
            if (!agent_->supports_memory(kind)) return NIXL_ERR_NOT_SUPPORTED;
            if (auto s = check_device_of(mem); s != NIXL_SUCCESS) return s;
        }
        auto r = agent_->register_memory({reinterpret_cast<std::byte*>(mem.addr), mem.len}, kind);
        if (!r) return status_of(r.error());
        auto md = std::make_unique<local_metadata>();
        md->region = *r;
        md->type = nixl_mem;
        out = md.release();
        return NIXL_SUCCESS;
    });
}

nixl_status_t engine::deregisterMem(nixlBackendMD* meta) {
    return guarded("deregisterMem", [&] {
        auto* md = dynamic_cast<local_metadata*>(meta);
        if (md == nullptr) return NIXL_ERR_INVALID_PARAM;
        if (auto r = agent_->deregister(md->region); !r) return status_of(r.error());
        delete md;
        return NIXL_SUCCESS;
    });
}

nixl_status_t engine::connect(const std::string& remote_agent) {
    return guarded("connect", [&] {
        // The connection is started by loadRemoteConnInfo and completes in the background (a
        // blocking wait here would stall two agents driven by one thread); transfers wait for it.
        if (remote_agent == localAgent)
            return status(agent_->add_peer(localAgent, plugins::as_bytes_of(agent_->connection_info())));
        return agent_->knows_peer(remote_agent) ? NIXL_SUCCESS : NIXL_ERR_NOT_FOUND;
    });
}

nixl_status_t engine::disconnect(const std::string& remote_agent) {
    return guarded("disconnect", [&] { return status(agent_->remove_peer(remote_agent)); });
}

nixl_status_t engine::unloadMD(nixlBackendMD* input) {
    return guarded("unloadMD", [&] {
        auto* md = dynamic_cast<remote_metadata*>(input);
        if (md == nullptr) return NIXL_ERR_INVALID_PARAM;
        if (auto r = agent_->unload(md->region); !r) return status_of(r.error());
        delete md;
        return NIXL_SUCCESS;
    });
}

nixl_status_t engine::prepXfer(const nixl_xfer_op_t& operation, const nixl_meta_dlist_t& local,
                               const nixl_meta_dlist_t& remote, const std::string& remote_agent,
                               nixlBackendReqH*& handle, const nixl_opt_b_args_t* opt_args) const {
    return guarded("prepXfer", [&] {
        if ((operation != NIXL_READ && operation != NIXL_WRITE) || local.descCount() != remote.descCount() ||
            local.descCount() == 0 || !is_memory_type(local.getType()) || !is_memory_type(remote.getType()))
            return NIXL_ERR_INVALID_PARAM;
        std::vector<plugins::segment> segments;
        segments.reserve(static_cast<std::size_t>(local.descCount()));
        for (std::size_t i = 0; i < static_cast<std::size_t>(local.descCount()); ++i) {
            const auto& l = local[i];
            const auto& r = remote[i];
            auto* lmd = dynamic_cast<local_metadata*>(l.metadataP);
            auto* rmd = dynamic_cast<remote_metadata*>(r.metadataP);
            if (lmd == nullptr || rmd == nullptr || l.len != r.len || l.len == 0 || lmd->type != local.getType() ||
                rmd->type != remote.getType())
                return NIXL_ERR_INVALID_PARAM;
            segments.push_back({.local = {reinterpret_cast<std::byte*>(l.addr), l.len},
                                .local_registration = lmd->region,
                                .remote_address = r.addr,
                                .remote_registration = rmd->region});
        }
        auto t = agent_->prepare(operation == NIXL_READ ? plugins::transfer_op::read : plugins::transfer_op::write,
                                 remote_agent, segments);
        if (!t) return status_of(t.error());
        auto h = std::make_unique<request>();
        h->transfer = *t;
        h->peer = remote_agent;
        if (opt_args != nullptr && opt_args->hasNotif) h->notification = opt_args->notifMsg;
        handle = h.release();
        return NIXL_SUCCESS;
    });
}

nixl_status_t engine::postXfer(const nixl_xfer_op_t&, const nixl_meta_dlist_t&, const nixl_meta_dlist_t&,
                               const std::string& remote_agent, nixlBackendReqH*& handle,
                               const nixl_opt_b_args_t* opt_args) const {
    return guarded("postXfer", [&] {
        auto* h = dynamic_cast<request*>(handle);
        if (h == nullptr || h->peer != remote_agent) return NIXL_ERR_INVALID_PARAM;
        std::optional<std::string_view> notification;
        if (opt_args != nullptr && opt_args->hasNotif)
            notification = opt_args->notifMsg;
        else if (h->notification)
            notification = *h->notification;
        return status(agent_->post(h->transfer, notification));
    });
}

nixl_status_t engine::checkXfer(nixlBackendReqH* handle) const {
    return guarded("checkXfer", [&] {
        auto* h = dynamic_cast<request*>(handle);
        if (h == nullptr) return NIXL_ERR_INVALID_PARAM;
        return status(agent_->check(h->transfer));
    });
}

nixl_status_t engine::releaseReqH(nixlBackendReqH* handle) const {
    return guarded("releaseReqH", [&] {
        auto* h = dynamic_cast<request*>(handle);
        if (h == nullptr) return NIXL_ERR_INVALID_PARAM;
        if (auto r = agent_->release(h->transfer); !r) return status_of(r.error());
        delete h;
        return NIXL_SUCCESS;
    });
}

nixl_status_t engine::getPublicData(const nixlBackendMD* meta, std::string& str) const {
    return guarded("getPublicData", [&] {
        auto* md = dynamic_cast<const local_metadata*>(meta);
        if (md == nullptr) return NIXL_ERR_INVALID_PARAM;
        auto s = agent_->public_data(md->region);
        if (!s) return status_of(s.error());
        str = std::move(*s);
        return NIXL_SUCCESS;
    });
}

nixl_status_t engine::getConnInfo(std::string& str) const {
    return guarded("getConnInfo", [&] {
        str = agent_->connection_info();
        return NIXL_SUCCESS;
    });
}

nixl_status_t engine::loadRemoteConnInfo(const std::string& remote_agent, const std::string& info) {
    return guarded("loadRemoteConnInfo",
                   [&] { return status(agent_->add_peer(remote_agent, plugins::as_bytes_of(info))); });
}

nixl_status_t engine::loadRemoteMD(const nixlBlobDesc& input, const nixl_mem_t& nixl_mem,
                                   const std::string& remote_agent, nixlBackendMD*& output) {
    return guarded("loadRemoteMD", [&] {
        // A peer's device memory is reached by its key like its host memory: no GPU needed here.
        if (!is_memory_type(nixl_mem)) return NIXL_ERR_NOT_SUPPORTED;
        auto r = agent_->load_remote(remote_agent, plugins::as_bytes_of(input.metaInfo));
        if (!r) return status_of(r.error());
        auto md = std::make_unique<remote_metadata>();
        md->region = *r;
        md->type = nixl_mem;
        output = md.release();
        return NIXL_SUCCESS;
    });
}

nixl_status_t engine::loadLocalMD(nixlBackendMD* input, nixlBackendMD*& output) {
    return guarded("loadLocalMD", [&] {
        auto* md = dynamic_cast<local_metadata*>(input);
        if (md == nullptr) return NIXL_ERR_INVALID_PARAM;
        auto data = agent_->public_data(md->region);
        if (!data) return status_of(data.error());
        auto r = agent_->load_remote(localAgent, plugins::as_bytes_of(*data));
        if (!r) return status_of(r.error());
        auto out = std::make_unique<remote_metadata>();
        out->region = *r;
        out->type = md->type;
        output = out.release();
        return NIXL_SUCCESS;
    });
}

nixl_status_t engine::getNotifs(notif_list_t& notif_list) {
    return guarded("getNotifs", [&] {
        for (auto& n : agent_->take_notifications()) notif_list.emplace_back(std::move(n.agent), std::move(n.message));
        return NIXL_SUCCESS;
    });
}

nixl_status_t engine::genNotif(const std::string& remote_agent, const std::string& msg) const {
    return guarded("genNotif", [&] { return status(agent_->notify(remote_agent, msg)); });
}

}  // namespace loom::nixl_backend
