// The verbs transport's wire format: the fixed header at the start of every ring message, and
// the sizes of the eager ring and its credits. Host byte order (every rank runs this build).
#pragma once

#include <cstddef>
#include <cstdint>

namespace ccscope::transports::verbs {

inline constexpr uint32_t kWireMagic = 0x53425256;  // "VRBS"

enum class WireKind : uint16_t {
  kEager = 1,   // payload follows: the whole message
  kRts = 2,     // a rendezvous message: it arrives by RDMA WRITE with immediate `seq`
  kAdvert = 3,  // receiver -> sender: message `seq` may be written at addr/rkey, `len` room
  kNack = 4,    // receiver -> sender: message `seq` was refused or swallowed (`why`)
  kCredit = 5,  // only returns credits
  kAbort = 6,   // the sender ended every exchange with us
};

enum class NackWhy : uint16_t { kNone = 0, kDiscarded = 1, kTagMismatch = 2, kTooLong = 3 };

struct WireHeader {
  uint32_t magic = kWireMagic;
  WireKind kind = WireKind::kEager;
  NackWhy why = NackWhy::kNone;
  uint32_t tag = 0;      // eager/rts: the send's tag; advert/nack: the receive's tag
  uint32_t credits = 0;  // ring slots the sender of this header reposted for its peer
  uint64_t seq = 0;      // per (sender, receiver) message number
  uint64_t len = 0;      // eager/rts: message bytes; advert/nack: the receive's room
  uint64_t addr = 0;     // advert: where the message goes
  uint32_t rkey = 0;     // advert
  uint32_t reserved = 0;
};
static_assert(sizeof(WireHeader) == 48);

// Messages up to this many bytes travel eagerly (one copy on each side); longer ones by
// rendezvous, straight from the send buffer into the receive buffer.
inline constexpr size_t kEagerMaxBytes = 8192;
inline constexpr size_t kSlotBytes = kEagerMaxBytes + sizeof(WireHeader);
// Receive slots per peer, each with one receive work request posted (and as many staging slots
// for sends). Data stops kCtrlReserve credits short of zero so that adverts, refusals and credit
// returns always have room.
inline constexpr uint32_t kRingSlots = 64;
inline constexpr uint32_t kCtrlReserve = 8;
// Credits returned by an explicit message once this many are owed (fewer when idle).
inline constexpr uint32_t kCreditBatch = 16;

}  // namespace ccscope::transports::verbs
