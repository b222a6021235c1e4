// What an asynchronous front end adds to a fabric operation: one iteration posts a tagged
// receive and a tagged send of 8 bytes to the endpoint itself (shm loopback) and reads the
// queue until both completed —
//   core   : endpoint::tagged_recv / tagged_send, completion_queue::read_tagged
//   sender : loom::async(ep) senders started into reused storage, execution::poll_completions
//   asio   : loom::asio::endpoint::async_tagged_receive / async_tagged_send with a handler,
//            io_context::run_one with the fabric_service polling (zero interval)
//   asio_chain : the same, each iteration started by the handlers of the one before
// and, as bm_core_idle and bm_sender_idle, one poll of a queue with nothing in it.
// bm_core, bm_sender and bm_asio take an argument: KiB of memory read between starting the two
// operations and reading their completions (bm_evict alone). With 4096 the caches then hold
// none of the state either step touches, as in a stream whose copies pass through them between
// a window's receives being posted and completed. D1 and LL misses per iteration with
// callgrind's cache simulation (--cache-sim=yes --LL=2097152,16,64, the eviction not
// collected: --toggle-collect='*evict*' as well).
// Time per iteration here; instructions per iteration with callgrind, one benchmark at a time:
//   valgrind --tool=callgrind --toggle-collect='*bm_asio(*' loom-front-end-bench
//       --benchmark_filter=bm_asio/ --iterations=20000
#include <benchmark/benchmark.h>

#include <loom/asio.hpp>
#include <loom/execution.hpp>
#include <loom/loom.hpp>

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

namespace {

/// Reads `kib` KiB of memory of its own: what a stream's copies do to the caches between the
/// operations of one rank. Out of line, for callgrind's --toggle-collect.
[[gnu::noinline]] void evict(std::int64_t kib) {
    static std::vector<std::uint64_t> memory;
    const auto words = static_cast<std::size_t>(kib) * 1024 / sizeof(std::uint64_t);
    if (memory.size() < words) memory.resize(words, 1);
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < words; i += 8) sum += memory[i];  // one word a cache line
    benchmark::DoNotOptimize(sum);
}

void bm_evict(benchmark::State& state) {
    for (auto _ : state) evict(state.range(0));
}

/// A loopback shm endpoint whose own address is its peer.
struct loop {
    loom::fabric_info info;
    loom::fabric fabric;
    loom::domain domain;
    loom::completion_queue cq;
    loom::address_vector av;
    loom::endpoint ep;
    std::optional<loom::peer_addr> self;
    std::array<std::byte, 64> out{}, in{};
    loom::memory_region out_mr, in_mr;

    auto open() -> bool {
        auto i = loom::query_fabric({.capabilities = loom::capability::msg | loom::capability::tagged,
                                     .ep_type = loom::endpoint_types::rdm,
                                     .provider = "shm"});
        if (!i) return false;
        info = *i;
        fabric = loom::fabric::create(info).value();
        domain = loom::domain::create(fabric, info).value();
        cq = loom::completion_queue::create(domain, {.size = 64}).value();
        av = loom::address_vector::create(domain).value();
        ep = loom::endpoint::create(domain, info).value();
        if (!ep.bind_cq(cq, loom::cq_bind::transmit | loom::cq_bind::recv) || !ep.bind_av(av) || !ep.enable())
            return false;
        self.emplace(av.insert(ep.name().value()).value());
        out_mr = loom::memory_region::register_memory(domain, std::span{out}, loom::mr_access_flags::send).value();
        in_mr = loom::memory_region::register_memory(domain, std::span{in}, loom::mr_access_flags::recv).value();
        return true;
    }
    [[nodiscard]] auto to_receive() -> loom::asio::mutable_registered_buffer {
        return {::asio::buffer(in.data(), 8), &in_mr};
    }
    [[nodiscard]] auto to_send() -> loom::asio::const_registered_buffer {
        return {::asio::buffer(out.data(), 8), &out_mr};
    }
};

/// The loop's endpoint as an Asio endpoint of `ioc`, its queue read by the started fabric service.
auto serve(::asio::io_context& ioc, loop& l) -> loom::asio::endpoint {
    loom::asio::endpoint ep(ioc, std::move(l.ep), l.cq, l.cq);
    auto& service = loom::asio::fabric_service::use(ioc);
    (void)service.register_cq(l.cq);
    service.start();
    return ep;
}

void bm_core(benchmark::State& state) {
    loop l;
    if (!l.open()) return state.SkipWithError("no shm");
    loom::request_context send_ctx, recv_ctx;
    std::array<loom::tagged_completion, 16> entries;
    int done = 0;
    auto read = [&] {
        auto n = l.cq.read_tagged(entries);
        if (!n) return false;
        done += static_cast<int>(*n);
        return true;
    };
    for (auto _ : state) {
        done = 0;
        while (!l.ep.tagged_recv(std::span{l.in}.first(8), 1, 0, loom::fabric_addrs::unspecified, l.in_mr.descriptor(),
                                 &recv_ctx))
            if (!read()) return state.SkipWithError("read failed");
        while (!l.ep.tagged_send(std::span{l.out}.first(8), 1, *l.self, l.out_mr.descriptor(), &send_ctx))  // again
            if (!read()) return state.SkipWithError("read failed");
        evict(state.range(0));
        while (done < 2)
            if (!read()) return state.SkipWithError("read failed");
    }
}

struct count_receiver {
    using receiver_concept = loom::execution::receiver_t;
    int* done;
    void set_value(auto&&...) && noexcept { ++*done; }
    void set_error(std::error_code) && noexcept { *done = -1000; }
    void set_stopped() && noexcept { *done = -1000; }
};

void bm_sender(benchmark::State& state) {
    loop l;
    if (!l.open()) return state.SkipWithError("no shm");
    namespace ex = loom::execution;
    auto messages = loom::async(l.ep);
    using recv_op = ex::connect_result_t<loom::message_senders::receive_sender, count_receiver>;
    using send_op = ex::connect_result_t<loom::message_senders::send_sender, count_receiver>;
    std::optional<recv_op> r;
    std::optional<send_op> s;
    for (auto _ : state) {
        int done = 0;
        auto& ro = r.emplace(ex::detail::emplace_from{[&] {
            return ex::connect(messages.tagged_recv_from(std::span{l.in}.first(8), l.in_mr.descriptor(),
                                                         loom::fabric_addrs::unspecified, 1, 0, &l.cq),
                               count_receiver{&done});
        }});
        ex::start(ro);
        auto& so = s.emplace(ex::detail::emplace_from{[&] {
            return ex::connect(
                messages.tagged_send_to(std::span{l.out}.first(8), l.out_mr.descriptor(), *l.self, 1, &l.cq),
                count_receiver{&done});
        }});
        ex::start(so);
        evict(state.range(0));
        while (done >= 0 && done < 2) (void)ex::poll_completions(l.cq);
        if (done < 0) return state.SkipWithError("operation failed");
    }
}

void bm_asio(benchmark::State& state) {
    loop l;
    if (!l.open()) return state.SkipWithError("no shm");
    ::asio::io_context ioc;
    // The loop below drives run_one between operations: without work of its own the io_context
    // would stop (and be restarted) whenever no operation is outstanding.
    auto work = ::asio::make_work_guard(ioc);
    auto ep = serve(ioc, l);
    const auto in = l.to_receive();
    const auto out = l.to_send();
    for (auto _ : state) {
        int done = 0;
        auto count = [&done](std::error_code ec, std::size_t) { done += ec ? -1000 : 1; };
        ep.async_tagged_receive(in, 1, count);
        ep.async_tagged_send_to(out, *l.self, 1, count);
        evict(state.range(0));
        while (done >= 0 && done < 2) ioc.run_one();
        if (done < 0) return state.SkipWithError("operation failed");
    }
    loom::asio::fabric_service::use(ioc).stop();
}

/// bm_asio's iterations as an Asio program (or a coroutine) runs them: the handlers of one start
/// the next, and the io_context runs until the last. A pass of the service reads on for the
/// operations its handlers start, so one turn of the io_context is shared by the iterations run
/// in that pass.
struct asio_chain {
    loom::asio::endpoint& ep;
    loom::asio::mutable_registered_buffer in;
    loom::asio::const_registered_buffer out;
    loom::peer_addr to;
    std::int64_t left{0};
    int pending{0};
    bool failed{false};

    struct handler {
        asio_chain* c;
        void operator()(std::error_code ec, std::size_t) const { c->completed(ec); }
    };
    void start() {
        pending = 2;
        ep.async_tagged_receive(in, 1, 0, handler{this});
        ep.async_tagged_send_to(out, to, 1, handler{this});
    }
    void completed(std::error_code ec) {
        failed = failed || ec;
        if (--pending == 0 && --left > 0 && !failed) start();
    }
    [[nodiscard]] auto finished() const -> bool { return failed || (left == 0 && pending == 0); }
};

void bm_asio_chain(benchmark::State& state) {
    loop l;
    if (!l.open()) return state.SkipWithError("no shm");
    ::asio::io_context ioc;
    auto ep = serve(ioc, l);
    const auto batch = static_cast<std::int64_t>(state.max_iterations);
    while (state.KeepRunningBatch(batch)) {
        asio_chain c{ep, l.to_receive(), l.to_send(), *l.self, batch};
        c.start();
        while (!c.finished()) ioc.run_one();
        if (c.failed) return state.SkipWithError("operation failed");
    }
    loom::asio::fabric_service::use(ioc).stop();
}

// A poll that finds nothing: what a rank waiting for its peer's message repeats, so its length
// is how long the message can sit in the queue before the waiting rank sees it. One receive
// that nothing matches is outstanding. (The Asio service's passes read the queue through the
// same dispatch_ready as poll_completions, up to fabric_service::spin_reads times a pass.)
void bm_core_idle(benchmark::State& state) {
    loop l;
    if (!l.open()) return state.SkipWithError("no shm");
    loom::request_context recv_ctx;
    std::array<loom::tagged_completion, 16> entries;
    if (!l.ep.tagged_recv(std::span{l.in}.first(8), 2, 0, loom::fabric_addrs::unspecified, l.in_mr.descriptor(),
                          &recv_ctx))
        return state.SkipWithError("receive refused");
    for (auto _ : state) {
        auto n = l.cq.read_tagged(entries);
        if (!n || *n != 0) return state.SkipWithError("unexpected completion");
    }
}

/// The idle benchmark's own receiver type: sharing count_receiver would share (and so change the
/// inlining of) bm_sender's operation code.
struct flag_receiver {
    using receiver_concept = loom::execution::receiver_t;
    bool* done;
    void set_value(auto&&...) && noexcept { *done = true; }
    void set_error(std::error_code) && noexcept { *done = true; }
    void set_stopped() && noexcept { *done = true; }
};

void bm_sender_idle(benchmark::State& state) {
    loop l;
    if (!l.open()) return state.SkipWithError("no shm");
    namespace ex = loom::execution;
    bool done = false;
    auto op = ex::connect(loom::async(l.ep).tagged_recv_from(std::span{l.in}.first(8), l.in_mr.descriptor(),
                                                             loom::fabric_addrs::unspecified, 2, 0, &l.cq),
                          flag_receiver{&done});
    ex::start(op);
    for (auto _ : state) {
        auto r = ex::poll_completions(l.cq);
        if (r.completed != 0 || r.unhandled || done) return state.SkipWithError("unexpected completion");
    }
    // The receive completes before its state goes.
    loom::request_context send_ctx;
    if (!l.ep.tagged_send(std::span{l.out}.first(8), 2, *l.self, l.out_mr.descriptor(), &send_ctx)) return;
    while (!done) (void)ex::poll_completions(l.cq);
}

}  // namespace

/// --iterations=N: every benchmark runs exactly N iterations once (for callgrind: instructions
/// per iteration = the function's inclusive count / N).
auto main(int argc, char** argv) -> int {
    std::int64_t iterations = 0;
    int kept = 1;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a.starts_with("--iterations="))
            iterations = std::stoll(std::string(a.substr(13)));
        else
            argv[kept++] = argv[i];
    }
    argc = kept;
    for (auto [name, fn, evicts] :
         {std::tuple{"bm_core", &bm_core, true}, std::tuple{"bm_sender", &bm_sender, true},
          std::tuple{"bm_asio", &bm_asio, true}, std::tuple{"bm_asio_chain", &bm_asio_chain, false},
          std::tuple{"bm_core_idle", &bm_core_idle, false}, std::tuple{"bm_sender_idle", &bm_sender_idle, false},
          std::tuple{"bm_evict", &bm_evict, true}}) {
        auto* b = benchmark::RegisterBenchmark(name, fn);
        if (evicts) b->Arg(0)->Arg(4096);
        if (iterations > 0) b->Iterations(iterations);
    }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
