// Sends a tagged message to itself through the installed sender front end (shm loopback).
#include "../shm_chain.hpp"

#include <loom/execution.hpp>

#include <array>
#include <cstdio>

namespace {
/// Records how when_all(receive, send) completed: 1 when the 64-byte message arrived.
struct receiver {
    using receiver_concept = loom::execution::receiver_t;
    int* state;
    void set_value(std::size_t n) && noexcept { *state = n == 64 ? 1 : 2; }
    void set_error(std::error_code) && noexcept { *state = 2; }
    void set_error(std::exception_ptr) && noexcept { *state = 2; }
    void set_stopped() && noexcept { *state = 2; }
};
}  // namespace

int main() {
    using namespace loom;
    auto chain = open_shm_chain();
    if (!chain) return 1;
    auto& [info, fab, dom, cq, av] = *chain;
    auto ep = endpoint::create(dom, info).value();
    ep.bind_cq(cq, cq_bind::transmit | cq_bind::recv).value();
    ep.bind_av(av).value();
    ep.enable().value();
    auto self = av.insert(ep.name().value()).value();
    std::array<std::byte, 64> out{}, in{};
    out.fill(std::byte{3});
    auto messages = loom::async(ep);
    int state = 0;
    auto op = execution::connect(
        execution::when_all(messages.tagged_recv(in, 7, 0, &cq), messages.tagged_send_to(out, nullptr, self, 7, &cq)),
        receiver{&state});
    execution::start(op);
    for (int i = 0; i < 1000000 && state == 0; ++i) (void)execution::poll_completions(cq);
    if (state != 1 || in != out) return 1;
    std::printf("execution consumer: backend %s, message received\n", execution::execution_backend_name);
    return 0;
}
