// An abort board: a small shared-memory segment per rank in which a rank on the same host marks
// that it aborted its exchanges with the owner. UCX's shared-memory transports carry our abort
// notice through the owner's FIFO, which a rank's posted rendezvous requests can fill; the
// notice then waits for the owner to drain it and for the aborting rank to progress once more,
// which it may never do. The board needs neither: the owner reads it in progress().
// Between hosts (tcp, rc) the notice's own connection carries it, and no board is mapped.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace ccscope::transports::ucx {

inline constexpr uint32_t kBoardMagic = 0x43435542;  // "CCUB"

struct BoardHeader {
  uint32_t magic;
  uint32_t nranks;
  std::atomic<uint32_t> marks;  // how many marks were made: the owner scans when it moves
  uint32_t pad;
};

class AbortBoard {
 public:
  AbortBoard() = default;
  AbortBoard(AbortBoard&& o) noexcept { *this = std::move(o); }
  AbortBoard& operator=(AbortBoard&& o) noexcept;
  AbortBoard(const AbortBoard&) = delete;
  AbortBoard& operator=(const AbortBoard&) = delete;
  ~AbortBoard();

  // The owner's board under a new name unique to this process ("/ccscope-ucxab-...").
  static core::Result<AbortBoard> create(int nranks);
  // A peer's board by the name it published; an empty board where the name does not exist
  // here (the peer is on another host) or is not a board of `nranks` ranks.
  static AbortBoard open(const std::string& name, int nranks);

  bool mapped() const { return base_ != nullptr; }
  const std::string& name() const { return name_; }
  // The owner: once every peer opened it, nothing needs the name.
  void unlinkName();
  // A peer: `from` aborted its exchanges with the owner.
  void mark(int from);
  // The owner: ranks marked since the last call (each once).
  std::vector<int> newMarks();

 private:
  void release();  // unmaps, and unlinks an owner's name
  BoardHeader* header() const { return reinterpret_cast<BoardHeader*>(base_); }
  std::atomic<uint32_t>* slot(int rank) const {
    return reinterpret_cast<std::atomic<uint32_t>*>(base_ + sizeof(BoardHeader)) + rank;
  }

  char* base_ = nullptr;
  size_t len_ = 0;
  std::string name_;
  bool owner_ = false;
  uint32_t seen_ = 0;           // the owner: marks counted at the last scan
  std::vector<bool> reported_;  // the owner: ranks newMarks() returned already
};

}  // namespace ccscope::transports::ucx
