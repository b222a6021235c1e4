// Opens the object chain of the first RDM provider with msg+tagged and prints it.
#include "../shm_chain.hpp"

#include <cstdio>

int main() {
    using namespace loom;
    auto chain = open_shm_chain();
    if (!chain) return 1;
    auto& [info, fab, dom, cq, av] = *chain;
    auto ep = endpoint::create(dom, info).value();
    ep.bind_cq(cq, cq_bind::transmit | cq_bind::recv).value();
    ep.bind_av(av).value();
    ep.enable().value();
    std::printf("consumer: %s endpoint at %s\n", std::string(info.provider_name()).c_str(),
                to_string(ep.name().value()).c_str());
    return 0;
}
