// loom/loom.hpp — the whole core binding.
#pragma once

#include <loom/address.hpp>
#include <loom/address_vector.hpp>
#include <loom/atomic.hpp>
#include <loom/completion_queue.hpp>
#include <loom/context.hpp>
#include <loom/contract_endpoint.hpp>
#include <loom/counter.hpp>
#include <loom/domain.hpp>
#include <loom/endpoint.hpp>
#include <loom/error.hpp>
#include <loom/fabric.hpp>
#include <loom/fabric_info.hpp>
#include <loom/fabric_query.hpp>
#include <loom/flags.hpp>
#include <loom/memory_region.hpp>
#include <loom/mr_cache.hpp>
#include <loom/provider_facts.hpp>
#include <loom/provider_traits.hpp>
#include <loom/msg.hpp>
#include <loom/scalable_endpoint.hpp>
#include <loom/shared_rx_context.hpp>
#include <loom/rma.hpp>
#include <loom/tagged_claim.hpp>
#include <loom/trigger.hpp>
