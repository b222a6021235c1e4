// The NIXL paths, driven as an inference server drives NIXL: the real agent (the wheel's
// libnixl_capi.so, loaded with dlopen) with one backend — nixl: our libplugin_LOOM.so, nixl-ucx:
// the wheel's UCX backend — memory registered once, metadata exchanged over the channel, then
// one prepared request per window slot (create_xfer_req once per point, posted again every
// iteration) and get_xfer_status until done. The target drives its agent with get_notifs
// until the initiator's closing notification arrives. LOOM picks its provider from LOOM_PROVIDER /
// LOOM_IFACE, which loom-bench sets; UCX picks its own transports.
#include <dlfcn.h>
#include <glob.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "nixl_capi.hpp"
#include "path.hpp"

namespace loom::bench {
namespace {

namespace capi = nixl_capi;

auto nixl_error(const char* what, int rc) -> std::string {
    return std::string(what) + ": NIXL status " + std::to_string(rc);
}

/// NIXL reads one plugin directory: a private one holding links to our plugin and the wheel's
/// UCX plugin, made once per process and removed by remove_nixl_plugin_dir (loom-bench ends
/// its ranks with _exit, so no destructor would).
struct plugin_dir {
    std::string path;
    std::string error;
};

auto the_plugin_dir() -> plugin_dir& {
    static plugin_dir dir;
    return dir;
}

auto prepare_plugins(const path_config& cfg) -> const plugin_dir& {
    plugin_dir& d = the_plugin_dir();
    if (!d.path.empty() || !d.error.empty()) return d;
    std::array<char, 64> tmpl{};
    std::snprintf(tmpl.data(), tmpl.size(), "/tmp/loom-bench-nixl.XXXXXX");
    if (::mkdtemp(tmpl.data()) == nullptr) {
        d.error = "mkdtemp failed";
        return d;
    }
    d.path = tmpl.data();
    const std::filesystem::path capi_dir = std::filesystem::path(cfg.nixl_capi).parent_path();
    const std::filesystem::path ucx = capi_dir / "plugins" / "libplugin_UCX.so";
    std::error_code ec;
    std::filesystem::create_symlink(std::filesystem::absolute(cfg.nixl_plugin), d.path + "/libplugin_LOOM.so", ec);
    if (!ec && std::filesystem::exists(ucx)) std::filesystem::create_symlink(ucx, d.path + "/libplugin_UCX.so", ec);
    if (ec) d.error = "plugin links in " + d.path + ": " + ec.message();
    // Through a link the UCX plugin's $ORIGIN rpath no longer finds the wheel's UCX
    // libraries: load them from where they are, so that their sonames are already present.
    for (const char* pattern : {"libucs-*.so*", "libucm-*.so*", "libuct-*.so*", "libucp-*.so*"}) {
        const std::string where = (capi_dir.parent_path() / "nixl_cu13.libs" / pattern).string();
        ::glob_t g{};
        if (::glob(where.c_str(), 0, nullptr, &g) == 0)
            for (std::size_t i = 0; i < g.gl_pathc; ++i) (void)::dlopen(g.gl_pathv[i], RTLD_NOW | RTLD_GLOBAL);
        ::globfree(&g);
    }
    ::setenv("NIXL_PLUGIN_DIR", d.path.c_str(), 1);
    return d;
}

/// One code copy of the path (path.hpp: place_copy); every copy is the same code.
template <int Copy>
class nixl_path final : public path {
public:
    ~nixl_path() override {
        if (api_ == nullptr || agent_ == nullptr) return;
        release_requests();
        if (notifs_ != nullptr) api_->destroy_notif_map(notifs_);
        if (!remote_.empty()) api_->invalidate_remote_md(agent_, remote_.c_str());
        if (registered_) api_->deregister_mem(agent_, regs_, opts_);
        if (regs_ != nullptr) api_->destroy_reg_dlist(regs_);
        if (opts_ != nullptr) api_->destroy_opt_args(opts_);
        api_->destroy_agent(agent_);  // also ends the backend
    }
    auto name() const -> std::string override { return name_; }
    auto unsupported(operation op) const -> std::string override {
        if (op == operation::rma_write || op == operation::rma_read) return {};
        return "NIXL moves data by one-sided READ and WRITE only";
    }
    auto domain_name() const -> std::string override { return backend_; }

    auto open(const path_config& cfg, const buffers& buf, channel& ch, int rank) -> std::string override {
        buf_ = buf;
        backend_ = cfg.nixl_backend;
        name_ = backend_ == "LOOM" ? "nixl" : "nixl-ucx";
        if (cfg.nixl_capi.empty()) return "no NIXL C API library (--nixl-capi)";
        if (const auto& dir = prepare_plugins(cfg); !dir.error.empty()) return dir.error;
        std::string error;
        api_ = capi::load(cfg.nixl_capi, error);
        if (api_ == nullptr) return error;
        static int opened = 0;  // agent names are unique per process
        const std::string me = "loom-bench-" + name_ + "-" + std::to_string(rank) + "-" + std::to_string(opened++);
        const capi::agent_config ac{};
        if (int rc = api_->create_configured_agent(me.c_str(), &ac, &agent_); rc != capi::success)
            return nixl_error("create_configured_agent", rc);
        if (auto e = create_backend(); !e.empty()) return e;
        if (auto e = register_buffers(); !e.empty()) return e;
        if (auto e = exchange(ch); !e.empty()) return e;
        if (int rc = api_->create_notif_map(&notifs_); rc != capi::success) return nixl_error("create_notif_map", rc);
        if (int rc = api_->make_connection(agent_, remote_.c_str(), opts_); rc != capi::success)
            return nixl_error("make_connection", rc);
        return ch.barrier() ? std::string{} : "barrier failed";
    }

    auto run(operation op, int rank, std::size_t n, int iterations, int window) -> std::string override {
        if (rank != 0) return wait_for_closing();
        const bool read = op == operation::rma_read;
        if (auto e = prepare(read, n, window); !e.empty()) return e;
        for (int i = 0; i < iterations; ++i) {
            for (int k = 0; k < window; ++k) {
                const int rc = api_->post_xfer_req(agent_, reqs_[static_cast<std::size_t>(k)], opts_);
                if (rc < 0) [[unlikely]]
                    return nixl_error("post_xfer_req", rc);
            }
            for (int k = 0; k < window; ++k)
                if (auto e = wait(reqs_[static_cast<std::size_t>(k)]); !e.empty()) [[unlikely]]
                    return e;
        }
        const char done = 'd';
        if (int rc = api_->gen_notif(agent_, remote_.c_str(), &done, 1, opts_); rc != capi::success)
            return nixl_error("gen_notif", rc);
        return {};
    }

private:
    auto create_backend() -> std::string {
        capi::mem_list mems = nullptr;
        capi::params params = nullptr;
        if (int rc = api_->get_plugin_params(agent_, backend_.c_str(), &mems, &params); rc != capi::success)
            return nixl_error(("get_plugin_params " + backend_).c_str(), rc);
        capi::backend b = nullptr;
        const int rc = api_->create_backend(agent_, backend_.c_str(), params, &b);
        api_->destroy_mem_list(mems);
        api_->destroy_params(params);
        if (rc != capi::success) return nixl_error(("create_backend " + backend_).c_str(), rc);
        if (int r = api_->create_opt_args(&opts_); r != capi::success) return nixl_error("create_opt_args", r);
        if (int r = api_->opt_args_add_backend(opts_, b); r != capi::success)
            return nixl_error("opt_args_add_backend", r);
        return {};
    }

    auto register_buffers() -> std::string {
        if (int rc = api_->create_reg_dlist(capi::mem_dram, &regs_); rc != capi::success)
            return nixl_error("create_reg_dlist", rc);
        for (auto* p : {buf_.tx, buf_.rx})
            if (int rc = api_->reg_dlist_add_desc(regs_, reinterpret_cast<std::uintptr_t>(p), buf_.registered_size(), 0,
                                                  nullptr, 0);
                rc != capi::success)
                return nixl_error("reg_dlist_add_desc", rc);
        if (int rc = api_->register_mem(agent_, regs_, opts_); rc != capi::success)
            return nixl_error("register_mem", rc);
        registered_ = true;
        return {};
    }

    /// Metadata (NIXL's own bytes) and the two buffer addresses, both ways.
    auto exchange(channel& ch) -> std::string {
        void* md = nullptr;
        std::size_t len = 0;
        if (int rc = api_->get_local_md(agent_, &md, &len); rc != capi::success) return nixl_error("get_local_md", rc);
        std::vector<std::byte> mine(static_cast<std::byte*>(md), static_cast<std::byte*>(md) + len), theirs;
        std::free(md);
        const std::array<std::uint64_t, 2> addrs{reinterpret_cast<std::uint64_t>(buf_.tx),
                                                 reinterpret_cast<std::uint64_t>(buf_.rx)};
        if (!ch.send_blob(mine) || !ch.recv_blob(theirs) || !ch.send(addrs.data(), sizeof addrs) ||
            !ch.recv(peer_.data(), sizeof peer_))
            return "metadata exchange failed";
        char* remote = nullptr;
        if (int rc = api_->load_remote_md(agent_, theirs.data(), theirs.size(), &remote); rc != capi::success)
            return nixl_error("load_remote_md", rc);
        remote_ = remote;
        std::free(remote);
        return {};
    }

    /// One request per window slot k: bytes [k·n, (k+1)·n) — write: tx to the peer's rx; read:
    /// the peer's tx into rx (the raw path's addresses). Kept while the point stays the same.
    auto prepare(bool read, std::size_t n, int window) -> std::string {
        if (read == prepared_read_ && n == prepared_n_ && static_cast<std::size_t>(window) == reqs_.size()) return {};
        release_requests();
        for (int k = 0; k < window; ++k) {
            const std::size_t off = static_cast<std::size_t>(k) * n;
            capi::xfer_dlist local = nullptr, remote = nullptr;
            if (api_->create_xfer_dlist(capi::mem_dram, &local) != capi::success ||
                api_->create_xfer_dlist(capi::mem_dram, &remote) != capi::success)
                return "create_xfer_dlist failed";
            const auto* mine = read ? buf_.rx : buf_.tx;
            api_->xfer_dlist_add_desc(local, reinterpret_cast<std::uintptr_t>(mine) + off, n, 0);
            api_->xfer_dlist_add_desc(remote, (read ? peer_[0] : peer_[1]) + off, n, 0);
            capi::xfer_req r = nullptr;
            const int rc = api_->create_xfer_req(agent_, read ? capi::op_read : capi::op_write, local, remote,
                                                 remote_.c_str(), &r, opts_);
            api_->destroy_xfer_dlist(local);
            api_->destroy_xfer_dlist(remote);
            if (rc != capi::success) return nixl_error("create_xfer_req", rc);
            reqs_.push_back(r);
        }
        prepared_read_ = read;
        prepared_n_ = n;
        return {};
    }

    void release_requests() noexcept {
        for (auto r : reqs_) {
            api_->release_xfer_req(agent_, r);
            api_->destroy_xfer_req(r);
        }
        reqs_.clear();
    }

    auto wait(capi::xfer_req r) -> std::string {
        unsigned spins = 0;
        auto deadline = std::chrono::steady_clock::time_point::max();
        for (;;) {
            const int rc = api_->get_xfer_status(agent_, r);
            if (rc == capi::success) [[likely]]
                return {};
            if (rc != capi::in_progress) return nixl_error("get_xfer_status", rc);
            if ((++spins & 0xfffU) == 0) {
                const auto now = std::chrono::steady_clock::now();
                if (deadline == std::chrono::steady_clock::time_point::max()) deadline = now + wait_limit;
                if (now > deadline) return "transfer not done within " + std::to_string(wait_limit.count()) + " s";
            }
        }
    }

    /// The target: its agent runs (get_notifs progresses the backend) until the closing
    /// notification of the initiator's run arrives.
    auto wait_for_closing() -> std::string {
        if (pending_ > 0) {
            --pending_;
            return {};
        }
        const auto deadline = std::chrono::steady_clock::now() + wait_limit;
        for (;;) {
            if (int rc = api_->get_notifs(agent_, notifs_, opts_); rc != capi::success)
                return nixl_error("get_notifs", rc);
            std::size_t got = 0;
            if (api_->notif_map_get_notifs_size(notifs_, remote_.c_str(), &got) == capi::success) pending_ += got;
            api_->notif_map_clear(notifs_);
            if (pending_ > 0) {  // one per run of the initiator, however they arrive
                --pending_;
                return {};
            }
            if (std::chrono::steady_clock::now() > deadline) return "no closing notification from the initiator";
        }
    }

    const capi::api* api_{nullptr};
    capi::agent agent_{nullptr};
    capi::opt_args opts_{nullptr};
    capi::reg_dlist regs_{nullptr};
    capi::notif_map notifs_{nullptr};
    bool registered_{false};
    buffers buf_{};
    std::string backend_, name_, remote_;
    std::array<std::uint64_t, 2> peer_{};  ///< the peer's tx and rx addresses
    std::vector<capi::xfer_req> reqs_{};
    std::size_t pending_{0};  ///< closing notifications received and not yet consumed
    bool prepared_read_{false};
    std::size_t prepared_n_{0};
};

}  // namespace

namespace nixl_capi {

auto load(const std::string& library, std::string& error) -> const api* {
    static api table{};
    static void* lib = nullptr;
    if (lib != nullptr) return &table;
    void* h = ::dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) {
        error = std::string("dlopen: ") + ::dlerror();
        return nullptr;
    }
    bool missing = false;
    const auto get = [&](auto& fn, const char* name) {
        fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(h, name));
        if (fn == nullptr && !missing) {
            missing = true;
            error = std::string("dlsym ") + name + ": not exported by " + library;
        }
    };
    get(table.create_configured_agent, "nixl_capi_create_configured_agent");
    get(table.destroy_agent, "nixl_capi_destroy_agent");
    get(table.get_plugin_params, "nixl_capi_get_plugin_params");
    get(table.destroy_mem_list, "nixl_capi_destroy_mem_list");
    get(table.destroy_params, "nixl_capi_destroy_params");
    get(table.create_backend, "nixl_capi_create_backend");
    get(table.create_opt_args, "nixl_capi_create_opt_args");
    get(table.destroy_opt_args, "nixl_capi_destroy_opt_args");
    get(table.opt_args_add_backend, "nixl_capi_opt_args_add_backend");
    get(table.create_reg_dlist, "nixl_capi_create_reg_dlist");
    get(table.destroy_reg_dlist, "nixl_capi_destroy_reg_dlist");
    get(table.reg_dlist_add_desc, "nixl_capi_reg_dlist_add_desc");
    get(table.register_mem, "nixl_capi_register_mem");
    get(table.deregister_mem, "nixl_capi_deregister_mem");
    get(table.get_local_md, "nixl_capi_get_local_md");
    get(table.load_remote_md, "nixl_capi_load_remote_md");
    get(table.invalidate_remote_md, "nixl_capi_invalidate_remote_md");
    get(table.make_connection, "nixl_capi_agent_make_connection");
    get(table.create_xfer_dlist, "nixl_capi_create_xfer_dlist");
    get(table.destroy_xfer_dlist, "nixl_capi_destroy_xfer_dlist");
    get(table.xfer_dlist_add_desc, "nixl_capi_xfer_dlist_add_desc");
    get(table.create_xfer_req, "nixl_capi_create_xfer_req");
    get(table.post_xfer_req, "nixl_capi_post_xfer_req");
    get(table.get_xfer_status, "nixl_capi_get_xfer_status");
    get(table.release_xfer_req, "nixl_capi_release_xfer_req");
    get(table.destroy_xfer_req, "nixl_capi_destroy_xfer_req");
    get(table.create_notif_map, "nixl_capi_create_notif_map");
    get(table.destroy_notif_map, "nixl_capi_destroy_notif_map");
    get(table.get_notifs, "nixl_capi_get_notifs");
    get(table.notif_map_get_notifs_size, "nixl_capi_notif_map_get_notifs_size");
    get(table.notif_map_clear, "nixl_capi_notif_map_clear");
    get(table.gen_notif, "nixl_capi_gen_notif");
    if (missing) return nullptr;  // the library stays loaded: it may have started threads
    lib = h;
    return &table;
}

}  // namespace nixl_capi

auto make_nixl_path(std::size_t offset, std::size_t copy) -> path_ptr { return place_copy<nixl_path>(copy, offset); }

void remove_nixl_plugin_dir() noexcept {
    plugin_dir& d = the_plugin_dir();
    if (d.path.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(d.path, ec);
    d.path.clear();
}

}  // namespace loom::bench
