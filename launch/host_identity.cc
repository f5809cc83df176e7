#include "launch/host_identity.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>

#include "core/affinity.h"

namespace ccscope::launch {
namespace {

std::string readBootId() {
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::string id;
  std::getline(in, id);
  return id;
}

std::string netnsInode() {
  struct stat st {};
  if (stat("/proc/self/ns/net", &st) != 0) return "";
  return fmt::format("net:{}", static_cast<unsigned long long>(st.st_ino));
}

HostIdentity readLocal() {
  HostIdentity id;
  char buf[256] = {0};
  gethostname(buf, sizeof buf - 1);
  id.name = buf;
  const std::string boot = readBootId(), net = netnsInode();
  if (!boot.empty() || !net.empty()) id.key = boot + "/" + net;
  if (auto cpus = core::allowedCpus()) id.cpus = static_cast<int>(cpus->size());
  return id;
}

}  // namespace

const HostIdentity& localHostIdentity() {
  static const HostIdentity id = readLocal();
  return id;
}

namespace {

// The boot id is the key up to '/'; without one, the hostname stands for the machine.
std::string machineOf(const HostIdentity& id) {
  const std::string boot = id.key.substr(0, id.key.find('/'));
  return boot.empty() ? "name:" + id.name : boot;
}

}  // namespace

int mostRanksOnOneMachine(const std::vector<HostIdentity>& ids) {
  std::map<std::string, int> per_machine;
  int most = 0;
  for (const HostIdentity& id : ids) most = std::max(most, ++per_machine[machineOf(id)]);
  return most;
}

Crowding mostCrowdedMachine(const std::vector<HostIdentity>& ids) {
  std::map<std::string, Crowding> per_machine;
  for (const HostIdentity& id : ids) {
    Crowding& m = per_machine[machineOf(id)];
    ++m.ranks;
    if (id.cpus > 0 && (m.cpus == 0 || id.cpus < m.cpus)) m.cpus = id.cpus;
  }
  Crowding worst;
  for (const auto& [machine, m] : per_machine)
    if (m.cpus > 0 && m.ranks > m.cpus &&
        (worst.cpus == 0 || m.ranks * worst.cpus > worst.ranks * m.cpus))
      worst = m;
  return worst;
}

std::vector<std::string> hostLabels(const std::vector<HostIdentity>& ids) {
  // Per hostname, the keys seen in order; per key, the first address seen.
  std::map<std::string, std::vector<std::string>> keys_of_name;
  std::map<std::string, std::string> addr_of_key;
  for (const auto& id : ids) {
    auto& keys = keys_of_name[id.name];
    if (std::find(keys.begin(), keys.end(), id.key) == keys.end()) keys.push_back(id.key);
    if (!id.key.empty() && addr_of_key[id.key].empty()) addr_of_key[id.key] = id.addr;
  }
  // One label per (name, key); an address shared by two keys (NAT, two containers with one
  // private address) falls back to the key's index, so labels stay distinct.
  std::map<std::string, std::string> label_of;  // name + '\n' + key -> label
  for (const auto& [name, keys] : keys_of_name) {
    std::map<std::string, int> uses;
    for (const auto& k : keys) ++uses[addr_of_key[k]];
    for (size_t i = 0; i < keys.size(); ++i) {
      const std::string& addr = addr_of_key[keys[i]];
      std::string label = name;
      if (keys.size() > 1 && !keys[i].empty())
        label = addr.empty() || uses[addr] > 1 ? fmt::format("{} #{}", name, i)
                                               : fmt::format("{} ({})", name, addr);
      label_of[name + '\n' + keys[i]] = label;
    }
  }
  std::vector<std::string> labels;
  labels.reserve(ids.size());
  for (const auto& id : ids) labels.push_back(label_of[id.name + '\n' + id.key]);
  return labels;
}

std::string encodeHostIdentity(const HostIdentity& id) {
  return id.name + '\t' + id.key + '\t' + id.addr + '\t' + std::to_string(id.cpus);
}

HostIdentity decodeHostIdentity(const std::string& s) {
  HostIdentity id;
  const size_t a = s.find('\t');
  id.name = s.substr(0, a);
  if (a == std::string::npos) return id;
  const size_t b = s.find('\t', a + 1);
  id.key = s.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1);
  if (b == std::string::npos) return id;
  const size_t c = s.find('\t', b + 1);
  id.addr = s.substr(b + 1, c == std::string::npos ? std::string::npos : c - b - 1);
  if (c != std::string::npos) id.cpus = std::atoi(s.c_str() + c + 1);
  return id;
}

}  // namespace ccscope::launch
