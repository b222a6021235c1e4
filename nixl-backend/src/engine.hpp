// The LOOM backend engine: NIXL's engine interface translated onto the runtime's transfer
// agent (plugins/transfer_agent.hpp). No transport logic here: argument checks, metadata
// objects, status codes.
#pragma once

#include "nixl_abi.hpp"

#include <loom/plugins/transfer_agent.hpp>

#include <memory>
#include <optional>
#include <string>

namespace loom::nixl_backend {

/// A registration of this agent's memory, as NIXL holds it.
struct local_metadata final : nixlBackendMD {
    local_metadata() : nixlBackendMD(true) {}
    plugins::local_region* region{nullptr};
    nixl_mem_t type{DRAM_SEG};
};

/// A region NIXL loaded for transfers: a peer's (loadRemoteMD) or this agent's (loadLocalMD).
struct remote_metadata final : nixlBackendMD {
    remote_metadata() : nixlBackendMD(false) {}
    plugins::remote_region* region{nullptr};
    nixl_mem_t type{DRAM_SEG};
};

struct request final : nixlBackendReqH {
    plugins::transfer* transfer{nullptr};
    std::string peer{};
    std::optional<std::string> notification{};  ///< given at prepXfer: sent when a post names none
};

/// What a runtime error means to NIXL.
[[nodiscard]] auto status_of(std::error_code e) noexcept -> nixl_status_t;

class engine final : public nixlBackendEngine {
public:
    explicit engine(const nixlBackendInitParams* params);
    ~engine() override;

    bool supportsRemote() const override { return true; }
    bool supportsLocal() const override { return true; }
    bool supportsNotif() const override { return true; }
    /// DRAM_SEG, and VRAM_SEG where CUDA memory can be registered (FI_HMEM and a CUDA driver).
    nixl_mem_list_t getSupportedMems() const override;

    nixl_status_t registerMem(const nixlBlobDesc& mem, const nixl_mem_t& nixl_mem, nixlBackendMD*& out) override;
    nixl_status_t deregisterMem(nixlBackendMD* meta) override;
    nixl_status_t connect(const std::string& remote_agent) override;
    nixl_status_t disconnect(const std::string& remote_agent) override;
    nixl_status_t unloadMD(nixlBackendMD* input) override;
    nixl_status_t prepXfer(const nixl_xfer_op_t& operation, const nixl_meta_dlist_t& local,
                           const nixl_meta_dlist_t& remote, const std::string& remote_agent, nixlBackendReqH*& handle,
                           const nixl_opt_b_args_t* opt_args) const override;
    nixl_status_t postXfer(const nixl_xfer_op_t& operation, const nixl_meta_dlist_t& local,
                           const nixl_meta_dlist_t& remote, const std::string& remote_agent, nixlBackendReqH*& handle,
                           const nixl_opt_b_args_t* opt_args) const override;
    nixl_status_t checkXfer(nixlBackendReqH* handle) const override;
    nixl_status_t releaseReqH(nixlBackendReqH* handle) const override;

    nixl_status_t getPublicData(const nixlBackendMD* meta, std::string& str) const override;
    nixl_status_t getConnInfo(std::string& str) const override;
    nixl_status_t loadRemoteConnInfo(const std::string& remote_agent, const std::string& info) override;
    nixl_status_t loadRemoteMD(const nixlBlobDesc& input, const nixl_mem_t& nixl_mem, const std::string& remote_agent,
                               nixlBackendMD*& output) override;
    nixl_status_t loadLocalMD(nixlBackendMD* input, nixlBackendMD*& output) override;
    nixl_status_t getNotifs(notif_list_t& notif_list) override;
    nixl_status_t genNotif(const std::string& remote_agent, const std::string& msg) const override;

private:
    std::unique_ptr<plugins::transfer_agent> agent_;
};

}  // namespace loom::nixl_backend
