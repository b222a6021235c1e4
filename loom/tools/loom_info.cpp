// loom-info: the providers this machine offers, their typed capabilities and limits.
#include <loom/loom.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

namespace {

void usage(FILE* out) {
    std::fputs(
        "usage: loom-info [-p PROVIDER] [-t rdm|msg|dgram] [-c] [-v] [-h]\n"
        "  -p, --provider NAME   only this provider (exact name, e.g. tcp, \"tcp;ofi_rxm\", shm)\n"
        "  -t, --type TYPE       only this endpoint type\n"
        "  -l, --list            one line per entry: provider, endpoint type, fabric, domain\n"
        "  -v, --verbose         also print libfabric's full description of each entry\n",
        out);
}

void row(const char* key, const std::string& value) { std::printf("  %-22s %s\n", key, value.c_str()); }
auto num(std::size_t v) -> std::string { return std::to_string(v); }

void print_entry(const loom::fabric_info& info, bool verbose) {
    const auto fa = info.get_fabric_attr();
    const auto da = info.get_domain_attr();
    const auto ea = info.get_endpoint_attr();
    const auto tx = info.get_tx_attr();
    const auto rx = info.get_rx_attr();
    std::printf("provider %.*s\n", static_cast<int>(info.provider_name().size()), info.provider_name().data());
    if (fa) {
        row("fabric", std::string(fa->name));
        row("provider version", num(fa->provider_version >> 16) + "." + num(fa->provider_version & 0xffff));
    }
    if (da) row("domain", std::string(da->name));
    row("endpoint type", loom::to_string(info.ep_type()));
    row("address format", loom::to_string(info.addr_format()));
    if (auto src = info.source_address()) row("source address", loom::to_string(*src));
    row("capabilities", loom::to_string(info.capabilities()));
    row("mode", loom::to_string(info.mode()));
    if (da) {
        row("threading", loom::to_string(da->threading));
        row("progress",
            "control=" + loom::to_string(da->control_progress) + " data=" + loom::to_string(da->data_progress));
        row("mr mode", loom::to_string(da->mr_mode));
        row("av type", loom::to_string(da->av));
        row("mr key size", num(da->mr_key_size));
        row("cq data size", num(da->cq_data_size));
        row("mr iov limit", num(da->mr_iov_limit));
        row("contexts (tx/rx)", num(da->max_ep_tx_ctx) + " / " + num(da->max_ep_rx_ctx));
        row("shared contexts", "stx " + num(da->max_ep_stx_ctx) + " / srx " + num(da->max_ep_srx_ctx));
    }
    if (ea) {
        row("max message size", num(ea->max_msg_size));
        row("tag format", [&] {
            char b[32];
            std::snprintf(b, sizeof b, "0x%016llx", static_cast<unsigned long long>(ea->mem_tag_format));
            return std::string(b);
        }());
    }
    if (tx) {
        row("inject size", num(tx->inject_size));
        row("tx queue size", num(tx->size));
        row("iov limit (tx/rma)", num(tx->iov_limit) + " / " + num(tx->rma_iov_limit));
        row("tx op flags", loom::to_string(tx->op_flags));
    }
    if (rx) {
        row("rx queue size", num(rx->size));
        row("iov limit (rx)", num(rx->iov_limit));
    }
    if (verbose) std::printf("%s", info.to_string().c_str());
    std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
    std::string provider;
    loom::endpoint_types type = loom::endpoint_types::unspecified;
    bool verbose = false, list = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        auto value = [&]() -> const char* {
            if (i + 1 >= argc) {
                std::fprintf(stderr, "loom-info: %s needs a value\n", argv[i]);
                std::exit(2);
            }
            return argv[++i];
        };
        if (a == "-p" || a == "--provider")
            provider = value();
        else if (a == "-t" || a == "--type") {
            auto t = loom::parse_endpoint_type(value());
            if (!t) {
                std::fprintf(stderr, "loom-info: unknown endpoint type '%s' (rdm, msg, dgram)\n", argv[i]);
                return 2;
            }
            type = *t;
        } else if (a == "-v" || a == "--verbose")
            verbose = true;
        else if (a == "-l" || a == "--list")
            list = true;
        else if (a == "-h" || a == "--help") {
            usage(stdout);
            return 0;
        } else {
            std::fprintf(stderr, "loom-info: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    auto all = loom::query_all({.ep_type = type, .provider = provider, .mr_mode = loom::mr_mode_flags{0xFFCULL}});
    if (!all) {
        std::fprintf(stderr, "loom-info: no provider matches (%s)\n", all.error().message().c_str());
        return 1;
    }
    std::size_t n = 0;
    for (const auto& info : *all) {
        ++n;
        if (list) {
            std::printf("%-16.*s %-6s %-24.*s %.*s\n", static_cast<int>(info.provider_name().size()),
                        info.provider_name().data(), loom::to_string(info.ep_type()).c_str(),
                        static_cast<int>(info.fabric_name().size()), info.fabric_name().data(),
                        static_cast<int>(info.domain_name().size()), info.domain_name().data());
        } else {
            print_entry(info, verbose);
        }
    }
    std::fprintf(stderr, "%zu entr%s\n", n, n == 1 ? "y" : "ies");
    return 0;
}
