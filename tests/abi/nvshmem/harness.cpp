// The NVSHMEM transport through its ABI, as NVSHMEM's core drives it: every rma and amo verb
// checked against a model byte-exact, put_signal ordering, fence and quiet, enforce_cst, a
// killed PE and bad input, on every provider of this machine, with staged and native atomics.
#include "harness_support.hpp"

#include <algorithm>
#include <atomic>
#include <set>

namespace nvshmem_harness {
namespace {

struct param {
    std::string provider;
    std::string atomics;  ///< LOOM_ATOMICS
    int pes{2};
};
auto name_of(const ::testing::TestParamInfo<param>& i) -> std::string {
    std::string s = i.param.provider + "_" + i.param.atomics + "_" + std::to_string(i.param.pes) + "pes";
    std::ranges::replace_if(s, [](char c) { return !std::isalnum(static_cast<unsigned char>(c)); }, '_');
    return s;
}

auto env_of(const param& p) -> std::vector<std::pair<std::string, std::string>> {
    return {{"LOOM_ATOMICS", p.atomics}, {"LOOM_PEER_TIMEOUT_MS", "20000"}};
}

auto pattern(int writer, int target, std::size_t i, int round = 0) -> std::byte {
    return static_cast<std::byte>(
        (writer * 131 + target * 31 + static_cast<int>(i) * 7 + static_cast<int>(i / 251) + round * 17) & 0xff);
}
template <class T>
auto load(pe_env& e, std::size_t off) -> T {
    return std::atomic_ref<T>(*reinterpret_cast<T*>(e.heap + off)).load(std::memory_order_acquire);
}

class nvshmem_abi : public ::testing::TestWithParam<param> {};

// ---------------------------------------------------------------- put, p, get, g, strided
constexpr std::size_t slot = 512 * 1024;
constexpr std::size_t small_at = 64, small_len = 4096, big_at = 8192, big_len = 256 * 1024, strided_at = 300 * 1024;
constexpr std::size_t strided_n = 16, strided_stride = 3;
constexpr std::size_t scratch_at = 3 * 1024 * 1024;

void write_everyone(pe_env& e) {
    for (int q = 0; q < e.n; ++q) {
        const std::size_t base = static_cast<std::size_t>(e.me) * slot;
        std::uint64_t value = 0x1000u * static_cast<unsigned>(e.me) + static_cast<unsigned>(q);
        CHECK(rma(e, abi::op_p, q, base, &value, 1, 8, false) == 0, "p to %d", q);
        std::vector<std::byte> small(small_len), big(big_len);
        for (std::size_t i = 0; i < small_len; ++i) small[i] = pattern(e.me, q, i);
        for (std::size_t i = 0; i < big_len; ++i) big[i] = pattern(e.me, q, i, 1);
        CHECK(put(e, q, base + small_at, small.data(), small_len, false) == 0, "blocking put to %d", q);
        small.assign(small_len, std::byte{0});  // the source may be reused once put returned
        CHECK(put(e, q, base + big_at, big.data(), big_len, true, 1) == 0, "put_nbi to %d", q);
        std::uint64_t elems[strided_n];
        for (std::size_t i = 0; i < strided_n; ++i) elems[i] = 0xabc00000u + i * 5 + static_cast<unsigned>(q);
        CHECK(rma(e, abi::op_put, q, base + strided_at, elems, strided_n, 8, true, 0, 1,
                  static_cast<std::ptrdiff_t>(strided_stride)) == 0,
              "strided put to %d", q);
        CHECK(quiet_all(e) == 0, "quiet");  // big and elems stay alive until here
    }
}

void check_written(pe_env& e) {
    for (int p = 0; p < e.n; ++p) {
        const std::size_t base = static_cast<std::size_t>(p) * slot;
        CHECK(load<std::uint64_t>(e, base) == 0x1000u * static_cast<unsigned>(p) + static_cast<unsigned>(e.me),
              "p from %d", p);
        for (std::size_t i = 0; i < small_len; ++i)
            CHECK(e.heap[base + small_at + i] == pattern(p, e.me, i), "put from %d byte %zu", p, i);
        for (std::size_t i = 0; i < big_len; ++i)
            CHECK(e.heap[base + big_at + i] == pattern(p, e.me, i, 1), "put_nbi from %d byte %zu", p, i);
        for (std::size_t i = 0; i < strided_n * strided_stride; ++i) {
            const auto v = load<std::uint64_t>(e, base + strided_at + i * 8);
            const std::uint64_t want =
                i % strided_stride == 0 ? 0xabc00000u + (i / strided_stride) * 5 + static_cast<unsigned>(e.me) : 0;
            CHECK(v == want, "strided element %zu from %d: %llx", i, p, static_cast<unsigned long long>(v));
        }
    }
}

void read_everyone(pe_env& e) {
    for (int q = 0; q < e.n; ++q) {
        const std::size_t base = static_cast<std::size_t>(e.me) * slot;
        std::vector<std::byte> small(small_len);  // not registered: the transport registers it
        CHECK(get(e, q, base + small_at, small.data(), small_len, false) == 0, "get from %d", q);
        for (std::size_t i = 0; i < small_len; ++i) CHECK(small[i] == pattern(e.me, q, i), "get byte %zu", i);
        std::byte* into = e.heap + scratch_at;  // inside the registered heap
        CHECK(get(e, q, base + big_at, into, big_len, true, 1) == 0, "get_nbi from %d", q);
        std::uint64_t g = 0;
        CHECK(rma(e, abi::op_g, q, base, &g, 1, 8, false) == 0, "g from %d", q);
        CHECK(g == 0x1000u * static_cast<unsigned>(e.me) + static_cast<unsigned>(q), "g value");
        std::uint64_t elems[strided_n] = {};
        CHECK(rma(e, abi::op_get, q, base + strided_at, elems, strided_n, 8, false, 0,
                  static_cast<std::ptrdiff_t>(strided_stride), 1) == 0,
              "strided get");
        for (std::size_t i = 0; i < strided_n; ++i)
            CHECK(elems[i] == 0xabc00000u + i * 5 + static_cast<unsigned>(q), "strided get element %zu", i);
        CHECK(quiet_all(e) == 0, "quiet after get_nbi");
        for (std::size_t i = 0; i < big_len; ++i) CHECK(into[i] == pattern(e.me, q, i, 1), "get_nbi byte %zu", i);
    }
}

TEST_P(nvshmem_abi, every_rma_verb_arrives_byte_exact) {
    run_pes(GetParam().pes, GetParam().provider, env_of(GetParam()), [](pe_env& e) {
        bring_up(e);
        write_everyone(e);
        e.barrier();
        check_written(e);
        e.barrier();
        read_everyone(e);
        CHECK(e.t->ops.enforce_cst(e.t) == 0 && e.t->ops.enforce_cst_at_target(e.t) == 0, "enforce_cst");
        tear_down(e);
    });
}

// Two selected NICs (lo and eth0) become two rails: large puts and gets stripe over both and
// still arrive byte-exact.
TEST(nvshmem_abi_rails, two_selected_nics_carry_every_rma_verb) {
    run_pes(2, "tcp", {{"LOOM_IFACE", "lo,eth0"}}, [](pe_env& e) {
        bring_up(e, 2);
        write_everyone(e);
        e.barrier();
        check_written(e);
        e.barrier();
        read_everyone(e);
        tear_down(e);
    });
}

// ---------------------------------------------------------------- atomics against a model
constexpr std::size_t amo_at = 3584 * 1024;
enum : std::size_t {
    a_fadd8 = 0,
    a_finc4 = 8,
    a_add4 = 12,
    a_inc8 = 16,
    a_or8 = 24,
    a_xor8 = 32,
    a_and8 = 40,
    a_swap8 = 48,
    a_cas8 = 56,
    a_cas4 = 64,
    a_fand4 = 68,
    a_for4 = 72,
    a_fxor4 = 76,
    a_sigset = 80,
    a_sigadd = 88,
    a_set = 96,
};
constexpr int rounds = 40;

constexpr auto amo_word(std::size_t w) -> std::size_t { return amo_at + w; }

/// What one PE's atomics fetched and found.
struct amo_outcome {
    std::vector<std::uint64_t> fetched8, fetched4;  ///< fetch_add and fetch_inc, in order
    std::uint64_t swapped{0}, cas8{0}, cas4{0};     ///< old values of swap and the compare-swaps
};

/// Every verb from this PE at the target's words; checks what a fetch alone can tell.
auto issue_atomics(pe_env& e, int target) -> amo_outcome {
    const auto at = amo_word;
    amo_outcome o;
    for (int i = 0; i < rounds; ++i) {
        std::uint64_t r8 = 0;
        std::uint32_t r4 = 0;
        CHECK(amo(e, target, at(a_fadd8), abi::amo_fetch_add, 8, 1, 0, &r8) == 0, "fetch_add");
        o.fetched8.push_back(r8);
        CHECK(amo(e, target, at(a_finc4), abi::amo_fetch_inc, 4, 0, 0, &r4) == 0, "fetch_inc");
        o.fetched4.push_back(r4);
        CHECK(amo(e, target, at(a_add4), abi::amo_add, 4, static_cast<unsigned>(e.me) + 1, 0, nullptr, i % 2) == 0,
              "add");
        CHECK(amo(e, target, at(a_inc8), abi::amo_inc, 8, 0) == 0, "inc");
        CHECK(amo(e, target, at(a_xor8), abi::amo_xor, 8, 1ULL << e.me) == 0, "xor");
    }
    CHECK(amo(e, target, at(a_or8), abi::amo_or, 8, 1ULL << (e.me + 8)) == 0, "or");
    CHECK(amo(e, target, at(a_and8), abi::amo_and, 8, ~(1ULL << e.me)) == 0, "and");
    std::uint32_t old4 = 0;
    CHECK(amo(e, target, at(a_fand4), abi::amo_fetch_and, 4, ~(1U << e.me), 0, &old4) == 0, "fetch_and");
    CHECK((old4 & (1U << e.me)) != 0, "fetch_and saw our bit cleared before us");
    CHECK(amo(e, target, at(a_for4), abi::amo_fetch_or, 4, 1U << e.me, 0, &old4) == 0, "fetch_or");
    CHECK((old4 & (1U << e.me)) == 0, "fetch_or saw our bit set before us");
    CHECK(amo(e, target, at(a_fxor4), abi::amo_fetch_xor, 4, 1U << e.me, 0, &old4) == 0, "fetch_xor");
    std::uint32_t cas4 = 0;
    CHECK(amo(e, target, at(a_swap8), abi::amo_swap, 8, static_cast<unsigned>(e.me) + 1, 0, &o.swapped) == 0, "swap");
    CHECK(amo(e, target, at(a_cas8), abi::amo_compare_swap, 8, static_cast<unsigned>(e.me) + 1, 0, &o.cas8) == 0,
          "cas8");
    CHECK(amo(e, target, at(a_cas4), abi::amo_compare_swap, 4, static_cast<unsigned>(e.me) + 100, 0, &cas4) == 0,
          "cas4");
    o.cas4 = cas4;
    CHECK(amo(e, target, at(a_set) + 8 * static_cast<std::size_t>(e.me), abi::amo_set, 8,
              0xabcd0000ULL + static_cast<unsigned>(e.me)) == 0,
          "set");
    CHECK(amo(e, target, at(a_sigadd), abi::amo_signal_add, 8, 2) == 0, "signal add");
    if (e.me == 0) CHECK(amo(e, target, at(a_sigset), abi::amo_signal_set, 8, 77) == 0, "signal set");
    CHECK(quiet_all(e) == 0, "quiet");
    return o;
}

/// On the target: its words against the model of what all PEs did (`outcomes`: swap, cas8 and
/// cas4 old values of each PE in turn).
void check_target_words(pe_env& e, const std::vector<std::uint64_t>& outcomes) {
    const auto at = amo_word;
    const auto n = static_cast<std::uint64_t>(e.n);
    CHECK(load<std::uint64_t>(e, at(a_fadd8)) == n * rounds, "fetch_add total");
    CHECK(load<std::uint32_t>(e, at(a_finc4)) == n * rounds, "fetch_inc total");
    CHECK(load<std::uint32_t>(e, at(a_add4)) == rounds * n * (n + 1) / 2, "add total");
    CHECK(load<std::uint64_t>(e, at(a_inc8)) == n * rounds, "inc total");
    CHECK(load<std::uint64_t>(e, at(a_xor8)) == 0, "xor (an even number of rounds)");
    CHECK(load<std::uint64_t>(e, at(a_or8)) == ((1ULL << e.n) - 1) << 8, "or");
    CHECK(load<std::uint64_t>(e, at(a_and8)) == ~((1ULL << e.n) - 1), "and");
    CHECK(load<std::uint32_t>(e, at(a_fand4)) == ~((1U << e.n) - 1), "fetch_and");
    CHECK(load<std::uint32_t>(e, at(a_for4)) == (1U << e.n) - 1, "fetch_or");
    CHECK(load<std::uint32_t>(e, at(a_fxor4)) == (1U << e.n) - 1, "fetch_xor");
    for (int p = 0; p < e.n; ++p)
        CHECK(load<std::uint64_t>(e, at(a_set) + 8 * static_cast<std::size_t>(p)) ==
                  0xabcd0000ULL + static_cast<unsigned>(p),
              "set %d", p);
    CHECK(load<std::uint64_t>(e, at(a_sigadd)) == 2 * n && load<std::uint64_t>(e, at(a_sigset)) == 77, "signals");
    // Swap: the old values and the final one are 0..n, each once.
    std::set<std::uint64_t> seen{load<std::uint64_t>(e, at(a_swap8))};
    for (int p = 0; p < e.n; ++p) seen.insert(outcomes[static_cast<std::size_t>(3 * p)]);
    CHECK(seen.size() == n + 1 && *seen.rbegin() == n, "swap chain");
    // Compare-swap: exactly one PE saw 0 and the word holds its value.
    int winners8 = 0, winners4 = 0;
    for (int p = 0; p < e.n; ++p) {
        if (outcomes[static_cast<std::size_t>(3 * p + 1)] == 0) {
            ++winners8;
            CHECK(load<std::uint64_t>(e, at(a_cas8)) == static_cast<unsigned>(p) + 1, "cas8 winner");
        }
        if (outcomes[static_cast<std::size_t>(3 * p + 2)] == 0) {
            ++winners4;
            CHECK(load<std::uint32_t>(e, at(a_cas4)) == static_cast<unsigned>(p) + 100, "cas4 winner");
        }
    }
    CHECK(winners8 == 1 && winners4 == 1, "compare-swap winners %d %d", winners8, winners4);
}

void run_atomics(pe_env& e) {
    const int target = e.n - 1;
    if (e.me == target) {
        std::atomic_ref<std::uint64_t>(*reinterpret_cast<std::uint64_t*>(e.heap + amo_word(a_and8))).store(~0ULL);
        std::atomic_ref<std::uint32_t>(*reinterpret_cast<std::uint32_t*>(e.heap + amo_word(a_fand4))).store(~0U);
    }
    e.barrier();
    const amo_outcome o = issue_atomics(e, target);

    // The model: the fetched values of all PEs together.
    std::vector<std::uint64_t> all8(static_cast<std::size_t>(rounds * e.n)), all4(all8.size());
    std::vector<std::uint64_t> mine4(o.fetched4.begin(), o.fetched4.end());
    CHECK(e.boot.allgather(o.fetched8.data(), all8.data(), rounds * 8, &e.boot) == 0, "gather");
    CHECK(e.boot.allgather(mine4.data(), all4.data(), rounds * 8, &e.boot) == 0, "gather");
    std::ranges::sort(all8);
    std::ranges::sort(all4);
    for (std::size_t i = 0; i < all8.size(); ++i) CHECK(all8[i] == i && all4[i] == i, "fetch-add tickets %zu", i);
    std::uint64_t outcome[3] = {o.swapped, o.cas8, o.cas4};
    std::vector<std::uint64_t> outcomes(static_cast<std::size_t>(3 * e.n));
    CHECK(e.boot.allgather(outcome, outcomes.data(), sizeof outcome, &e.boot) == 0, "gather");
    if (e.me == target) check_target_words(e, outcomes);
    const auto n = static_cast<std::uint64_t>(e.n);
    std::uint64_t total = 0;
    CHECK(amo(e, target, amo_word(a_fadd8), abi::amo_fetch, 8, 0, 0, &total) == 0 && total == n * rounds, "fetch");
}

TEST_P(nvshmem_abi, every_amo_verb_matches_the_model) {
    run_pes(GetParam().pes, GetParam().provider, env_of(GetParam()), [](pe_env& e) {
        bring_up(e);
        run_atomics(e);
        tear_down(e);
    });
}

// ---------------------------------------------------------------- put_signal, fence, quiet
constexpr std::size_t data_len = 128 * 1024, sig_at = 2 * 1024 * 1024, ack_at = sig_at + 64, flag_at = sig_at + 128;
constexpr int signal_rounds = 20;

template <class Pred>
void spin_until(Pred pred, const char* what) {
    const auto deadline = clk::now() + std::chrono::seconds(30);
    while (!pred()) CHECK(clk::now() < deadline, "timed out waiting for %s", what);
}

void signal_sender(pe_env& e) {
    std::vector<std::byte> data(data_len);
    for (int round = 0; round < signal_rounds; ++round) {
        for (std::size_t i = 0; i < data_len; ++i) data[i] = pattern(0, 1, i, round);
#if LOOM_NVSHMEM_MAJOR >= 4
        std::vector<abi::rma_memdesc> remote{e.remote(1, 0)}, local{{data.data(), 0, nullptr}};
        std::vector<abi::rma_bytesdesc> bytes{{data_len, 1, 1, 1}};
        abi::amo_memdesc sig{};
        sig.remote_memdesc = e.remote(1, sig_at);
        sig.val = 1;
        CHECK(e.t->ops.put_signal(e.t, 1, {abi::op_put, 1, 0, nullptr}, remote, local, bytes,
                                  {abi::amo_signal_add, 0, 1, 0}, &sig, {0, 8}, round % 2) == 0,
              "put_signal");
#else
        // Major 3 has no put_signal: the core composes put, fence, signal.
        CHECK(put(e, 1, 0, data.data(), data_len, true, round % 2) == 0, "put");
        CHECK(e.t->ops.fence(e.t, 1, round % 2) == 0, "fence");
        CHECK(amo(e, 1, sig_at, abi::amo_signal_add, 8, 1, 0, nullptr, round % 2) == 0, "signal");
#endif
        spin_until([&] { return load<std::uint64_t>(e, ack_at) == static_cast<std::uint64_t>(round) + 1; }, "ack");
    }
    // Fence: the first put is visible before the second.
    std::uint64_t one = 1;
    CHECK(put(e, 1, flag_at, &one, 8, true) == 0, "flag put");
#if LOOM_NVSHMEM_MAJOR >= 4
    CHECK(e.t->ops.fence(e.t, 1, 0, 0) == 0, "fence");
#else
    CHECK(e.t->ops.fence(e.t, 1, 0) == 0, "fence");
#endif
    CHECK(put(e, 1, flag_at + 8, &one, 8, true) == 0, "second flag put");
    CHECK(quiet_all(e) == 0, "quiet");
}

void signal_receiver(pe_env& e) {
    for (int round = 0; round < signal_rounds; ++round) {
        spin_until([&] { return load<std::uint64_t>(e, sig_at) == static_cast<std::uint64_t>(round) + 1; }, "signal");
        for (std::size_t i = 0; i < data_len; ++i)
            CHECK(e.heap[i] == pattern(0, 1, i, round), "round %d byte %zu before its signal", round, i);
        CHECK(amo(e, 0, ack_at, abi::amo_signal_set, 8, static_cast<std::uint64_t>(round) + 1) == 0, "ack");
    }
    spin_until([&] { return load<std::uint64_t>(e, flag_at + 8) == 1; }, "second flag");
    CHECK(load<std::uint64_t>(e, flag_at) == 1, "the fenced put overtook the one before it");
}

TEST_P(nvshmem_abi, a_signal_never_overtakes_its_data) {
    run_pes(2, GetParam().provider, env_of(GetParam()), [](pe_env& e) {
        bring_up(e);
        if (e.me == 0)
            signal_sender(e);
        else
            signal_receiver(e);
        tear_down(e);
    });
}

INSTANTIATE_TEST_SUITE_P(providers, nvshmem_abi,
                         ::testing::Values(param{"tcp", "staged"}, param{"tcp;ofi_rxm", "staged"},
                                           param{"tcp;ofi_rxm", "native"}, param{"shm", "staged"},
                                           param{"shm", "native"}, param{"sockets", "staged"},
                                           param{"sockets", "native"}, param{"tcp", "staged", 4}),
                         name_of);

// ---------------------------------------------------------------- refusals and failures
// tcp has no native atomics: asking for them is refused at connection, cleanly.
TEST(nvshmem_abi_refusals, native_atomics_are_refused_where_the_provider_has_none) {
    run_pes(2, "tcp", {{"LOOM_ATOMICS", "native"}}, [](pe_env& e) {
        auto init = load_init();
        CHECK(init(&e.t, nullptr, host_version) == 0, "init");
        share_with_transport(e);
        CHECK(connect(e.t) == abi::error_not_supported, "connect with native atomics on tcp");
        CHECK(e.t->ops.finalize(e.t) == 0, "finalize");
    });
}

// NVSHMEM of another major gets a clean refusal and no transport, so that it falls back.
TEST(nvshmem_abi_refusals, another_major_is_refused) {
    run_pes(1, "tcp", {}, [](pe_env&) {
        auto init = load_init();
        abi::transport* t = nullptr;
        for (int major : {abi::plugin_major - 1, abi::plugin_major + 1, 5, 7}) {
            CHECK(init(&t, nullptr, major * 10000) == abi::error_not_supported && t == nullptr, "major %d", major);
        }
        CHECK(init(nullptr, nullptr, host_version) == abi::error_invalid_value, "init(NULL)");
        CHECK(init(&t, nullptr, abi::interface_version) == 0 && t != nullptr, "its own major");
        abi::mem_handle h{};
        std::byte b[64];
        CHECK(t->ops.get_mem_handle(&h, b, sizeof b, t, false) == abi::error_invalid_value, "register before connect");
        CHECK(t->ops.finalize(t) == 0, "finalize");
    });
}

auto flip(abi::mem_handle h, std::size_t byte) -> abi::mem_handle {
    h.reserved[byte] = static_cast<char>(h.reserved[byte] ^ 0x10);
    return h;
}

void bad_rma_calls(pe_env& e) {
    std::uint64_t v = 7;
    abi::rma_verb put_verb{abi::op_put, 0, 0, nullptr};
    abi::rma_memdesc l{&v, 0, nullptr};
    abi::rma_bytesdesc b8{8, 1, 1, 1};
    auto r = e.remote(1, 0);
    CHECK(e.t->ops.rma(e.t, 1, put_verb, nullptr, &l, b8, 0) == abi::error_invalid_value, "NULL remote");
    CHECK(e.t->ops.rma(e.t, 1, put_verb, &r, nullptr, b8, 0) == abi::error_invalid_value, "NULL local");
    CHECK(e.t->ops.rma(nullptr, 1, put_verb, &r, &l, b8, 0) == abi::error_invalid_value, "NULL transport");
    for (int pe : {-1, e.n, 1000}) CHECK(e.t->ops.rma(e.t, pe, put_verb, &r, &l, b8, 0) != 0, "PE %d", pe);
    CHECK(e.t->ops.rma(e.t, 1, put_verb, &r, &l, b8, 9) != 0, "queue 9");
    CHECK(e.t->ops.rma(e.t, 1, {42, 0, 0, nullptr}, &r, &l, b8, 0) == abi::error_not_supported, "unknown verb");
    abi::mem_handle foreign{};
    std::memset(foreign.reserved, 0x5a, sizeof foreign.reserved);
    for (abi::mem_handle h :
         {foreign, abi::mem_handle{}, flip(e.handles[1], 0), flip(e.handles[1], 9), flip(e.handles[1], 20),
          flip(e.handles[1], 25), flip(e.handles[1], 60), flip(e.handles[1], 180), e.handles[0]}) {
        abi::rma_memdesc bad{r.ptr, 0, &h};
        CHECK(e.t->ops.rma(e.t, 1, put_verb, &bad, &l, b8, 0) == abi::error_invalid_value, "a bad handle");
    }
    auto edge = e.remote(1, heap_size - 4);
    CHECK(e.t->ops.rma(e.t, 1, put_verb, &edge, &l, b8, 0) == abi::error_invalid_value, "beyond the heap");
    auto below = r;
    below.ptr = reinterpret_cast<void*>(e.heap_base_of(1) - 8);
    CHECK(e.t->ops.rma(e.t, 1, put_verb, &below, &l, b8, 0) == abi::error_invalid_value, "before the heap");
    abi::rma_bytesdesc huge{e.t->max_op_len + 1, 1, 1, 1};
    CHECK(e.t->ops.rma(e.t, 1, put_verb, &r, &l, huge, 0) == abi::error_invalid_value, "beyond max_op_len");
    abi::rma_bytesdesc zero_elem{1, 0, 1, 1}, overflow{~std::size_t{0} / 2, 8, 1, 1};
    CHECK(e.t->ops.rma(e.t, 1, put_verb, &r, &l, zero_elem, 0) == abi::error_invalid_value, "elembytes 0");
    CHECK(e.t->ops.rma(e.t, 1, put_verb, &r, &l, overflow, 0) == abi::error_invalid_value, "length overflow");
    abi::rma_bytesdesc bad_stride{4, 8, 0, 1};
    CHECK(e.t->ops.rma(e.t, 1, put_verb, &r, &l, bad_stride, 0) == abi::error_invalid_value, "stride 0");
}

void bad_amo_calls(pe_env& e) {
    std::uint64_t ret = 0;
    CHECK(amo(e, 1, 0, abi::amo_fetch_add, 2, 1, 0, &ret) == abi::error_invalid_value, "2-byte atomic");
    CHECK(amo(e, 1, 0, abi::amo_fetch_add, 16, 1, 0, &ret) == abi::error_invalid_value, "16-byte atomic");
    CHECK(amo(e, 1, 4, abi::amo_add, 8, 1) == abi::error_invalid_value, "misaligned atomic");
    CHECK(amo(e, 1, 0, abi::amo_ack, 8, 1) == abi::error_not_supported, "ack");
    CHECK(amo(e, 1, 0, 99, 8, 1) == abi::error_not_supported, "unknown atomic");
    CHECK(amo(e, 1, 0, abi::amo_fetch, 8, 0, 0, nullptr) == abi::error_invalid_value, "fetch without result");
    CHECK(amo(e, 1, heap_size, abi::amo_add, 8, 1) == abi::error_invalid_value, "atomic beyond the heap");
    CHECK(e.t->ops.amo(e.t, 1, &ret, {abi::amo_add, 0, 1, 0}, nullptr, {0, 8}, 0) == abi::error_invalid_value,
          "NULL target");
#if LOOM_NVSHMEM_MAJOR >= 4
    std::vector<abi::rma_memdesc> remote{e.remote(1, 0)}, local;
    std::vector<abi::rma_bytesdesc> bytes{{8, 1, 1, 1}};
    abi::amo_memdesc sig{};
    sig.remote_memdesc = e.remote(1, 64);
    CHECK(e.t->ops.put_signal(e.t, 1, {abi::op_put, 1, 0, nullptr}, remote, local, bytes,
                              {abi::amo_signal_set, 0, 1, 0}, &sig, {0, 8}, 0) == abi::error_invalid_value,
          "put_signal with mismatched vectors");
#endif
}

void bad_memory_calls(pe_env& e) {
    abi::mem_handle h{};
    CHECK(e.t->ops.get_mem_handle(nullptr, e.heap, 64, e.t, false) == abi::error_invalid_value, "NULL handle");
    CHECK(e.t->ops.get_mem_handle(&h, nullptr, 64, e.t, false) == abi::error_invalid_value, "NULL buffer");
    CHECK(e.t->ops.get_mem_handle(&h, e.heap, 0, e.t, false) == abi::error_invalid_value, "empty buffer");
    CHECK(e.t->ops.get_mem_handle(&h, e.heap + 64, 64, e.t, false) != 0, "inside the heap's registration");
    std::vector<std::byte> extra(8192);
    CHECK(e.t->ops.get_mem_handle(&h, extra.data(), extra.size(), e.t, false) == 0, "a second registration");
    CHECK(e.t->ops.release_mem_handle(&h, e.t) == 0, "its release");
    CHECK(e.t->ops.release_mem_handle(&h, e.t) == abi::error_invalid_value, "released twice");
    CHECK(e.t->ops.release_mem_handle(&e.handles[1], e.t) == abi::error_invalid_value, "another PE's handle");
    abi::mem_handle corrupt = flip(e.mine, 12);
    CHECK(e.t->ops.release_mem_handle(&corrupt, e.t) == abi::error_invalid_value, "a corrupted handle");
    int access = 0;
    abi::pe_info info{};
    info.pe = e.n;
    CHECK(e.t->ops.can_reach_peer(nullptr, &info, e.t) == abi::error_invalid_value, "reach NULL");
    CHECK(e.t->ops.can_reach_peer(&access, &info, e.t) == abi::error_invalid_value, "reach a PE out of range");
    CHECK(e.t->ops.add_device_remote_mem_handles(e.t, 1, nullptr, 0, 8) == abi::error_invalid_value, "device handles");
    CHECK(e.t->ops.show_info(e.t, 0) == 0, "show_info");
}

// Every refusal leaves the transport whole: a put afterwards arrives.
TEST(nvshmem_abi_refusals, bad_input_gets_error_codes_and_loses_nothing) {
    run_pes(2, "tcp", {}, [](pe_env& e) {
        bring_up(e);
        if (e.me == 0) {
            bad_rma_calls(e);
            bad_amo_calls(e);
            bad_memory_calls(e);
            const std::uint64_t v = 0x600dULL;
            CHECK(put(e, 1, 128, &v, 8, false) == 0 && quiet_all(e) == 0, "a put after the refusals");
        }
        e.barrier();
        if (e.me == 1) CHECK(load<std::uint64_t>(e, 128) == 0x600dULL, "the put after the refusals");
        tear_down(e);
    });
}

// A killed PE: operations towards it fail within the peer timeout, none hangs, and the
// survivor still reaches itself and finalizes.
TEST(nvshmem_abi_refusals, a_killed_pe_fails_its_operations_without_a_hang) {
    run_pes(2, "tcp", {{"LOOM_PEER_TIMEOUT_MS", "2000"}},
            [](pe_env& e) {
                bring_up(e);
                e.barrier();
                if (e.me == 1) ::raise(SIGKILL);
                std::this_thread::sleep_for(std::chrono::milliseconds(200));
                std::vector<std::byte> data(64 * 1024, std::byte{1});
                const auto t0 = clk::now();
                int rc = 0;
                while (rc == 0 && clk::now() - t0 < std::chrono::seconds(30)) {
                    rc = put(e, 1, 0, data.data(), data.size(), true);
                    if (rc == 0) rc = quiet_all(e);
                }
                CHECK(rc != 0, "operations towards a dead PE kept succeeding");
                std::uint64_t ret = 0;
                CHECK(amo(e, 1, 0, abi::amo_fetch_add, 8, 1, 0, &ret) != 0, "a fetching atomic towards a dead PE");
                const std::uint64_t v = 9;
                CHECK(put(e, 0, 0, &v, 8, false) == 0, "a put to itself");
                (void)quiet_all(e);  // reports the earlier failures once
                CHECK(quiet_all(e) == 0, "quiet after the failures were reported");
                e.stop = true;
                e.proxy.join();
                CHECK(e.t->ops.release_mem_handle(&e.mine, e.t) == 0 && e.t->ops.finalize(e.t) == 0, "teardown");
                std::free(e.heap);
            },
            {1});
}

}  // namespace
}  // namespace nvshmem_harness
