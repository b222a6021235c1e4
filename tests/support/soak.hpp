// What a soak run records: the open file descriptors, resident memory and allocated heap of this
// process, sampled every so many cycles, and the growth between the first sample and the last.
// The heap (bytes malloc has handed out and not had back) tells a leak (it grows) from memory
// the allocator or a provider keeps for reuse (resident grows, the heap does not).
#pragma once

#include <dirent.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define LOOM_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LOOM_TEST_UNDER_ASAN 1
#endif
#endif

namespace loom::test {

/// AddressSanitizer's quarantine keeps freed memory resident (up to 256 MiB): there, resident
/// growth says nothing and is not measured; descriptors still are.
#if defined(LOOM_TEST_UNDER_ASAN)
inline constexpr bool measures_resident_memory = false;
#else
inline constexpr bool measures_resident_memory = true;
#endif

struct usage {
    long cycle{0};
    int descriptors{0};
    long resident_kib{0};
    long heap_kib{-1};  ///< -1: not known (not glibc)
};

/// This process's open descriptors (/proc/self/fd), resident set (/proc/self/statm) and, with
/// glibc, the heap in use (mallinfo2: arena chunks in use plus mmapped chunks).
inline auto sample_usage(long cycle) -> usage {
    usage u{.cycle = cycle};
    if (DIR* d = ::opendir("/proc/self/fd")) {
        while (const dirent* e = ::readdir(d))
            if (e->d_name[0] != '.') ++u.descriptors;
        ::closedir(d);
        --u.descriptors;  // the directory stream's own
    }
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
        long size = 0, resident = 0;
        if (std::fscanf(f, "%ld %ld", &size, &resident) == 2)
            u.resident_kib = resident * (::sysconf(_SC_PAGESIZE) / 1024);
        std::fclose(f);
    }
#if defined(__GLIBC__)
    const auto m = ::mallinfo2();
    u.heap_kib = static_cast<long>((m.uordblks + m.hblkhd) / 1024);
#endif
    return u;
}

/// Cycles a soak runs: LOOM_SOAK_CYCLES, or `fallback` (the short run in scripts/test).
inline auto soak_cycles(long fallback) -> long {
    const char* v = std::getenv("LOOM_SOAK_CYCLES");
    const long n = v != nullptr ? std::strtol(v, nullptr, 10) : 0;
    return n > 0 ? n : fallback;
}

/// Samples of one process, printed as a table row each. Growth counts from the second sample
/// (the first is taken before anything ran, to show what the first cycle made once).
class usage_log {
public:
    explicit usage_log(std::string who) : who_(std::move(who)) {}
    void take(long cycle) {
        samples_.push_back(sample_usage(cycle));
        const auto& u = samples_.back();
        std::fprintf(stderr, "soak %s: cycle %6ld  descriptors %4d  resident %8ld KiB  heap %8ld KiB\n", who_.c_str(),
                     u.cycle, u.descriptors, u.resident_kib, u.heap_kib);
    }
    [[nodiscard]] auto descriptor_growth() const -> int {
        return samples_.size() < 2 ? 0 : samples_.back().descriptors - samples_[1].descriptors;
    }
    [[nodiscard]] auto resident_growth_kib() const -> long {
        if (!measures_resident_memory || samples_.size() < 2) return 0;
        return samples_.back().resident_kib - samples_[1].resident_kib;
    }
    [[nodiscard]] auto samples() const -> const std::vector<usage>& { return samples_; }

private:
    std::string who_;
    std::vector<usage> samples_;
};

}  // namespace loom::test
