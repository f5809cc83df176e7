// What tells hosts apart. A hostname alone does not: containers and network namespaces reuse
// one. A rank's host is its hostname plus a key made of the kernel's boot id (one per machine
// boot) and the inode of its network namespace (one per network stack), and the address it
// reaches the rendezvous store from. Ranks with equal keys share a machine and a network stack.
#pragma once

#include <string>
#include <vector>

namespace ccscope::launch {

struct HostIdentity {
  std::string name;  // hostname
  std::string key;   // "<boot id>/net:<inode>"; empty when unknown
  std::string addr;  // the address the rank reaches the store from; may be empty
  int cpus = 0;      // the CPUs this rank may run on (its affinity mask); 0 when unknown
};

// This process's hostname and key (read once); addr is left empty.
const HostIdentity& localHostIdentity();

// One label per entry, equal exactly for entries with the same host: the hostname, or, where
// one hostname covers several keys, "hostname (addr)" (the first address seen for that key;
// "hostname #N" when none is known or another key shares it). Entries with an empty key are
// told apart by name only.
std::vector<std::string> hostLabels(const std::vector<HostIdentity>& ids);

// The most entries that run on one machine: the same boot id, whatever their network namespace
// or container (they share its cores); by hostname where a key has no boot id. Every rank
// computes the same figure, so decisions made from it (segment sizes) agree across ranks.
int mostRanksOnOneMachine(const std::vector<HostIdentity>& ids);

// The machine whose ranks most outnumber its CPUs (the fewest any of its ranks may run on):
// {ranks, cpus}, or {0, 0} where no machine's ranks outnumber what they may run on (or no CPU
// count is known). Every rank computes the same.
struct Crowding {
  int ranks = 0;
  int cpus = 0;
};
Crowding mostCrowdedMachine(const std::vector<HostIdentity>& ids);

// "name\tkey\taddr\tcpus", the form gathered through the store, and back (a plain hostname
// parses as a name with no key; a missing CPU count as 0).
std::string encodeHostIdentity(const HostIdentity& id);
HostIdentity decodeHostIdentity(const std::string& s);

}  // namespace ccscope::launch
