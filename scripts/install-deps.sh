#!/usr/bin/env bash
# Installs the Debian 12 packages ccscope builds and tests with; skips what is already there.
set -euo pipefail
pkgs=(build-essential cmake pkg-config git libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
      libgtest-dev googletest zlib1g-dev libtomlplusplus-dev openmpi-bin libopenmpi-dev
      libucx-dev ucx-utils libibverbs-dev librdmacm-dev rdma-core ibverbs-utils
      iproute2 iptables procps python3 libxml2-utils chromium clang-format clang-tidy
      slurmd slurmctld slurm-client munge python3-yaml ninja-build)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  echo "ccscope: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo_cmd apt-get update -qq
  $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
