// Replaces one of a libfabric object's operation tables (fid->ops, fid_domain->ops,
// fid_ep->msg, ...) with a copy the test may change, for the swap's lifetime: how the tests make
// a provider count, refuse or fail calls that no provider here fails on demand.
#pragma once

namespace loom_test {

/// `slot`: the object's pointer to its table. The copy starts as the provider's table; the
/// provider's is put back on destruction. Copies of one table do not nest.
template <class Ops>
class ops_swap {
public:
    explicit ops_swap(Ops*& slot) noexcept : slot_(slot), provider_(slot), copy_(*slot) { slot_ = &copy_; }
    ops_swap(const ops_swap&) = delete;
    auto operator=(const ops_swap&) -> ops_swap& = delete;
    ~ops_swap() { slot_ = provider_; }

    /// The table the object now calls through (change its entries).
    [[nodiscard]] auto copy() noexcept -> Ops& { return copy_; }
    /// The provider's own table, to pass calls on.
    [[nodiscard]] auto provider() const noexcept -> Ops* { return provider_; }

private:
    Ops*& slot_;
    Ops* provider_;
    Ops copy_;
};

}  // namespace loom_test
