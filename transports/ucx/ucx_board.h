// An abort board: a small shared-memory segment per rank in which a rank on the same host notes
// that it aborted its exchanges with the owner. UCX's shared-memory transports carry our abort
// notice through the owner's FIFO, which a rank's posted rendezvous requests can fill; the
// notice then waits for the owner to drain it and for the aborting rank to progress once more,
// which it may never do. The board needs neither: the owner reads it in progress().
// Between hosts (tcp, rc) the notice's own connection carries it, and no board is opened.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/status.h"

namespace ccscope::transports::ucx {

inline constexpr uint32_t kBoardMagic = 0x43435542;  // "CCUB"
// Marks a board holds: one per peer that aborts the owner, so the ranks of one host. Beyond
// them a mark is dropped and the notice alone tells the owner.
inline constexpr uint32_t kBoardEntries = 1024;

// Plain words, read and written through std::atomic_ref: the file's zeros are the start state.
struct BoardHeader {
  uint32_t magic;
  uint32_t entries;
  uint32_t marks;  // entries claimed by markers (each then writes its rank + 1 there)
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

  // The owner's board under `name` (a stale one of a killed run is replaced), its pages
  // allocated now: a full /dev/shm fails here, not later with SIGBUS.
  static core::Result<AbortBoard> create(const std::string& name, int nranks);
  // A peer's board by the name it published; an empty board where the name does not exist or
  // is not a board.
  static AbortBoard open(const std::string& name);

  bool mapped() const { return base_ != nullptr; }
  const std::string& name() const { return name_; }
  // The owner: once every peer opened it, nothing needs the name.
  void unlinkName();
  // A peer: `from` aborted its exchanges with the owner. False when the board is full.
  bool mark(int from);
  // The owner: ranks marked since the last call, each once.
  std::vector<int> newMarks();

 private:
  void release();  // unmaps, and unlinks an owner's name
  BoardHeader* header() const { return reinterpret_cast<BoardHeader*>(base_); }
  uint32_t* entry(uint32_t i) const {
    return reinterpret_cast<uint32_t*>(base_ + sizeof(BoardHeader)) + i;
  }

  char* base_ = nullptr;
  size_t len_ = 0;
  std::string name_;
  bool owner_ = false;
  uint32_t seen_ = 0;           // the owner: entries read
  std::vector<bool> reported_;  // the owner: per rank, whether newMarks() returned it
};

}  // namespace ccscope::transports::ucx
