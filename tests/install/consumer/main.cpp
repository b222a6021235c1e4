// Opens the object chain of the first RDM provider with msg+tagged and prints it.
#include <loom/loom.hpp>

#include <cstdio>

int main() {
    using namespace loom;
    auto info = query_fabric({.capabilities = capability::msg | capability::tagged,
                              .ep_type = endpoint_types::rdm, .provider = "shm"});
    if (!info) {
        std::fprintf(stderr, "no provider: %s\n", info.error().message().c_str());
        return 1;
    }
    auto fab = fabric::create(*info).value();
    auto dom = domain::create(fab, *info).value();
    auto cq = completion_queue::create(dom, {.size = 16}).value();
    auto av = address_vector::create(dom).value();
    auto ep = endpoint::create(dom, *info).value();
    ep.bind_cq(cq, cq_bind::transmit | cq_bind::recv).value();
    ep.bind_av(av).value();
    ep.enable().value();
    std::printf("consumer: %s endpoint at %s\n", std::string(info->provider_name()).c_str(),
                to_string(ep.name().value()).c_str());
    return 0;
}
