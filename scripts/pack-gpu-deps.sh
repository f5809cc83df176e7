#!/usr/bin/env bash
# Packs the third-party libraries ccscope's CMake build needs into one relocatable prefix,
# build/gpu-deps/, for a machine that has a compiler, CMake and CUDA but none of Debian's -dev
# packages (the GPU machine of scripts/gpu-check.sh). Made from this Debian 12 machine's
# packages: headers, static libraries and CMake package configs for fmt, spdlog (on the external
# fmt, as Debian configures it), CLI11, nlohmann_json, tomlplusplus, GTest/GMock and zlib.
# Everything links statically, so the binaries built against the pack need none of it at run
# time. Debian ships fmt, spdlog and toml++ only as shared libraries; their headers carry the
# whole implementation, so the static libraries are compiled here from the packed headers, one
# unit per upstream source file, with upstream's explicit instantiations. fmt's os.cc
# (fmt/os.h: fmt::file, fmt::output_file) has no header form and is left out: ccscope does not
# use it. pkg-config and MPI are optional in the top-level CMakeLists.txt and are not packed.
#
# Usage: scripts/pack-gpu-deps.sh [--out DIR] [--force] [--jobs N]
#   --out DIR  where the pack goes (default build/gpu-deps); replaced whole, never merged
#   --force    rebuild even when the stamp says the pack matches this script and the packages
#   --jobs N   parallel compiles (default 2: the shared 2-core machine)
# Prints the pack's size. Running it again with the same packages gives the same files
# (MANIFEST.sha256 inside lists them); the compile step runs under /tmp/ccscope-build.lock.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/build/gpu-deps" force=0 jobs=2
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift ;;
    --force) force=1 ;;
    --jobs) jobs=$2; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "pack-gpu-deps: unknown argument '$1' (--help)" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")

# The Debian packages the pack is made from; their versions are part of the stamp.
packages=(libfmt-dev libspdlog-dev libcli11-dev nlohmann-json3-dev libtomlplusplus-dev
          libgtest-dev libgmock-dev zlib1g-dev)
arch_lib=/usr/lib/$(gcc -print-multiarch 2>/dev/null || echo x86_64-linux-gnu)

check_packages() {
  local p missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "pack-gpu-deps: missing Debian packages: ${missing[*]} (scripts/install-deps.sh)" >&2
    exit 2
  fi
}

# The generated units below mirror fmt 9.1's src/format.cc, spdlog 1.10's src/*.cpp and
# toml++ 3's src/toml.cpp: other versions may instantiate other templates.
check_versions() {
  local fmt spdlog toml
  fmt=$(sed -n 's/^#define FMT_VERSION \([0-9]*\).*/\1/p' /usr/include/fmt/core.h)
  spdlog=$(sed -n 's/^#define SPDLOG_VER_MINOR \([0-9]*\).*/\1/p' /usr/include/spdlog/version.h)
  toml=$(sed -n 's/^#define TOML_LIB_MAJOR \([0-9]*\).*/\1/p' /usr/include/toml++/impl/version.h)
  if [ "${fmt:0:1}" != 9 ] || [ "$spdlog" != 10 ] || [ "$toml" != 3 ]; then
    echo "pack-gpu-deps: made for fmt 9, spdlog 1.10, toml++ 3; found FMT_VERSION $fmt," \
         "spdlog 1.$spdlog, toml++ $toml: check the units in $0 against their src/" >&2
    exit 2
  fi
}

stamp() {
  dpkg-query -W "${packages[@]}"
  sha256sum "$0" | cut -d' ' -f1
}

copy_headers() {
  local inc=$1/include
  mkdir -p "$inc"
  cp -a /usr/include/fmt /usr/include/spdlog /usr/include/CLI /usr/include/nlohmann \
        /usr/include/toml++ /usr/include/gtest /usr/include/gmock \
        /usr/include/zlib.h /usr/include/zconf.h "$inc/"
  # Debian's spdlog/fmt/bundled is a link to the system fmt; SPDLOG_FMT_EXTERNAL never reads it.
  find "$inc" -type l -delete
  local p d
  for p in "${packages[@]}"; do
    d=$1/share/doc/$p
    mkdir -p "$d"
    cp /usr/share/doc/"$p"/copyright "$d/"
  done
}

write_units() {
  local src=$1/src
  mkdir -p "$src/fmt" "$src/spdlog" "$src/toml"
  cat >"$src/fmt/format.cc" <<'EOF'
#include "fmt/format-inl.h"
FMT_BEGIN_NAMESPACE
namespace detail {
template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;
#ifndef FMT_STATIC_THOUSANDS_SEPARATOR
template FMT_API locale_ref::locale_ref(const std::locale& loc);
template FMT_API auto locale_ref::get<std::locale>() const -> std::locale;
#endif
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;
template FMT_API void buffer<char>::append(const char*, const char*);
template FMT_API void vformat_to(buffer<char>&, string_view,
                                 basic_format_args<FMT_BUFFER_CONTEXT(char)>, locale_ref);
template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<wchar_t>;
template FMT_API auto decimal_point_impl(locale_ref) -> wchar_t;
template FMT_API void buffer<wchar_t>::append(const wchar_t*, const wchar_t*);
}  // namespace detail
FMT_END_NAMESPACE
EOF
  write_spdlog_units "$src/spdlog"
  cat >"$src/toml/toml.cc" <<'EOF'
#define TOML_IMPLEMENTATION 1
#include <toml++/toml.h>
EOF
}

write_spdlog_units() {
  local d=$1
  cat >"$d/spdlog.cc" <<'EOF'
#include <spdlog/spdlog-inl.h>
#include <spdlog/common-inl.h>
#include <spdlog/details/backtracer-inl.h>
#include <spdlog/details/registry-inl.h>
#include <spdlog/details/os-inl.h>
#include <spdlog/pattern_formatter-inl.h>
#include <spdlog/details/log_msg-inl.h>
#include <spdlog/details/log_msg_buffer-inl.h>
#include <spdlog/logger-inl.h>
#include <spdlog/sinks/sink-inl.h>
#include <spdlog/sinks/base_sink-inl.h>
#include <spdlog/details/null_mutex.h>
#include <mutex>
template SPDLOG_API spdlog::logger::logger(std::string name, sinks_init_list::iterator begin,
                                           sinks_init_list::iterator end);
template class SPDLOG_API spdlog::sinks::base_sink<std::mutex>;
template class SPDLOG_API spdlog::sinks::base_sink<spdlog::details::null_mutex>;
EOF
  cat >"$d/async.cc" <<'EOF'
#include <spdlog/async.h>
#include <spdlog/async_logger-inl.h>
#include <spdlog/details/periodic_worker-inl.h>
#include <spdlog/details/thread_pool-inl.h>
template class SPDLOG_API spdlog::details::mpmc_blocking_queue<spdlog::details::async_msg>;
EOF
  echo '#include <spdlog/cfg/helpers-inl.h>' >"$d/cfg.cc"
  cat >"$d/file_sinks.cc" <<'EOF'
#include <spdlog/details/null_mutex.h>
#include <spdlog/details/file_helper-inl.h>
#include <spdlog/sinks/basic_file_sink-inl.h>
#include <spdlog/sinks/base_sink-inl.h>
#include <mutex>
template class SPDLOG_API spdlog::sinks::basic_file_sink<std::mutex>;
template class SPDLOG_API spdlog::sinks::basic_file_sink<spdlog::details::null_mutex>;
#include <spdlog/sinks/rotating_file_sink-inl.h>
template class SPDLOG_API spdlog::sinks::rotating_file_sink<std::mutex>;
template class SPDLOG_API spdlog::sinks::rotating_file_sink<spdlog::details::null_mutex>;
EOF
  write_spdlog_console_units "$d"
}

# color_sinks.cpp and stdout_sinks.cpp: each sink for both console mutexes, each factory function
# for the synchronous and the async factory.
write_spdlog_console_units() {
  local d=$1 cm=spdlog::details::console_mutex cn=spdlog::details::console_nullmutex
  local lg='std::shared_ptr<spdlog::logger>' sf=spdlog::synchronous_factory
  local af=spdlog::async_factory f k
  {
    printf '#include <mutex>\n#include <spdlog/details/null_mutex.h>\n#include <spdlog/async.h>\n'
    printf '#include <spdlog/sinks/ansicolor_sink-inl.h>\n'
    for k in ansicolor_sink ansicolor_stdout_sink ansicolor_stderr_sink; do
      printf 'template class SPDLOG_API spdlog::sinks::%s<%s>;\n' "$k" "$cm" "$k" "$cn"
    done
    printf '#include <spdlog/sinks/stdout_color_sinks-inl.h>\n'
    for f in "$sf" "$af"; do
      for k in stdout_color_mt stdout_color_st stderr_color_mt stderr_color_st; do
        printf 'template SPDLOG_API %s spdlog::%s<%s>(const std::string &, color_mode);\n' \
          "$lg" "$k" "$f"
      done
    done
  } >"$d/color_sinks.cc"
  {
    printf '#include <mutex>\n#include <spdlog/details/null_mutex.h>\n#include <spdlog/async.h>\n'
    printf '#include <spdlog/sinks/stdout_sinks-inl.h>\n'
    for k in stdout_sink_base stdout_sink stderr_sink; do
      printf 'template class SPDLOG_API spdlog::sinks::%s<%s>;\n' "$k" "$cm" "$k" "$cn"
    done
    for f in "$sf" "$af"; do
      for k in stdout_logger_mt stdout_logger_st stderr_logger_mt stderr_logger_st; do
        printf 'template SPDLOG_API %s spdlog::%s<%s>(const std::string &);\n' "$lg" "$k" "$f"
      done
    done
  } >"$d/stdout_sinks.cc"
}

# A Makefile, so that make runs the compiles in parallel and stops on the first error. Units are
# compiled from inside src/ by relative name and without debug info: no path of this machine
# ends up in the objects, and the libraries are the same wherever the checkout is. toml++ in
# C++20, as Debian builds it: its char8_t overloads exist only there.
write_makefile() {
  cat >"$1/Makefile" <<'EOF'
CXX ?= g++
FLAGS := -std=c++17 -O2 -DNDEBUG -fPIC -g0 -isystem ../include
FMT := fmt/format.o
SPDLOG := $(patsubst %.cc,%.o,$(sort $(wildcard spdlog/*.cc)))
TOML := toml/toml.o
all: ../lib/libfmt.a ../lib/libspdlog.a ../lib/libtomlplusplus.a
fmt/%.o: fmt/%.cc
	$(CXX) $(FLAGS) -c $< -o $@
spdlog/%.o: spdlog/%.cc
	$(CXX) $(FLAGS) -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL -c $< -o $@
toml/%.o: toml/%.cc
	$(CXX) $(FLAGS) -std=c++20 -DTOML_HEADER_ONLY=0 -c $< -o $@
../lib/libfmt.a: $(FMT)
../lib/libspdlog.a: $(SPDLOG)
../lib/libtomlplusplus.a: $(TOML)
../lib/%.a:
	mkdir -p ../lib && rm -f $@ && ar rcsD $@ $^
EOF
}

# One imported target, its paths relative to the config file: lib/cmake/NAME/ is three levels
# below the prefix wherever the pack is copied. The ${...} in single quotes are CMake's.
# shellcheck disable=SC2016
imported_target() {
  local target=$1 kind=$2 lib=$3 defs=$4 links=$5
  printf 'if(NOT TARGET %s)\n  add_library(%s %s IMPORTED)\n' "$target" "$target" "$kind"
  printf '  set_target_properties(%s PROPERTIES\n' "$target"
  [ -n "$lib" ] && printf '    IMPORTED_LOCATION "${_pack_prefix}/lib/%s"\n' "$lib"
  printf '    INTERFACE_INCLUDE_DIRECTORIES "${_pack_prefix}/include"\n'
  [ -n "$defs" ] && printf '    INTERFACE_COMPILE_DEFINITIONS "%s"\n' "$defs"
  [ -n "$links" ] && printf '    INTERFACE_LINK_LIBRARIES "%s"\n' "$links"
  printf '  )\nendif()\n'
}

# shellcheck disable=SC2016
config_head() {
  printf '# Made by scripts/pack-gpu-deps.sh from Debian %s: relocatable, static.\n' "$1"
  printf 'get_filename_component(_pack_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)\n'
  printf 'include(CMakeFindDependencyMacro)\n'
}

write_configs() {
  local cm=$1/lib/cmake d
  mkdir -p "$cm"/{fmt,spdlog,tomlplusplus,GTest}
  { config_head libfmt-dev
    imported_target fmt::fmt STATIC libfmt.a "" ""
    imported_target fmt::fmt-header-only INTERFACE "" FMT_HEADER_ONLY=1 ""
  } >"$cm/fmt/fmt-config.cmake"
  cp "$arch_lib/cmake/fmt/fmt-config-version.cmake" "$cm/fmt/"
  { config_head libspdlog-dev
    printf 'find_dependency(Threads)\nfind_dependency(fmt CONFIG)\n'
    printf 'set(SPDLOG_FMT_EXTERNAL ON)\n'
    imported_target spdlog::spdlog STATIC libspdlog.a \
      "SPDLOG_COMPILED_LIB;SPDLOG_FMT_EXTERNAL" "Threads::Threads;fmt::fmt"
    imported_target spdlog::spdlog_header_only INTERFACE "" \
      SPDLOG_FMT_EXTERNAL "Threads::Threads;fmt::fmt"
  } >"$cm/spdlog/spdlogConfig.cmake"
  cp "$arch_lib/cmake/spdlog/spdlogConfigVersion.cmake" "$cm/spdlog/"
  { config_head libtomlplusplus-dev
    imported_target tomlplusplus::tomlplusplus STATIC libtomlplusplus.a TOML_HEADER_ONLY=0 ""
  } >"$cm/tomlplusplus/tomlplusplusConfig.cmake"
  cp "$arch_lib/cmake/tomlplusplus/tomlplusplusConfigVersion.cmake" "$cm/tomlplusplus/"
  { config_head "libgtest-dev, libgmock-dev"
    printf 'find_dependency(Threads)\n'
    imported_target GTest::gtest STATIC libgtest.a GTEST_HAS_PTHREAD=1 Threads::Threads
    imported_target GTest::gtest_main STATIC libgtest_main.a "" "Threads::Threads;GTest::gtest"
    imported_target GTest::gmock STATIC libgmock.a "" "Threads::Threads;GTest::gtest"
    imported_target GTest::gmock_main STATIC libgmock_main.a "" "Threads::Threads;GTest::gmock"
  } >"$cm/GTest/GTestConfig.cmake"
  cp "$arch_lib/cmake/GTest/GTestConfigVersion.cmake" "$cm/GTest/"
  # Header-only upstream configs: already relative (three levels up from share/cmake/NAME).
  for d in CLI11 nlohmann_json; do
    mkdir -p "$cm/$d"
    cp /usr/share/cmake/"$d"/*.cmake "$cm/$d/"
  done
  if grep -rl '/usr' "$cm"; then
    echo "pack-gpu-deps: the configs above still name /usr: not relocatable" >&2
    exit 1
  fi
}

copy_debian_static() {
  mkdir -p "$1/lib"
  cp "$arch_lib"/lib{gtest,gtest_main,gmock,gmock_main}.a "$arch_lib/libz.a" "$1/lib/"
}

# Every strong symbol that Debian's shared fmt, spdlog and toml++ export is defined in the static
# ones (weak template instantiations depend on inlining), apart
# from fmt's os.cc (fmt::file, buffered_file, ostream, getpagesize and their helpers).
check_symbols() {
  local lib so missing os_cc='(^|for )fmt::v9::(buffered_file|file|ostream|getpagesize)\b'
  for lib in fmt spdlog tomlplusplus; do
    so=$(readlink -f "$arch_lib/lib$lib.so")
    missing=$(comm -23 <(nm -D --defined-only "$so" | awk '$2 ~ /^[TDBR]$/ {print $3}' | sort -u) \
                       <(nm --defined-only "$1/lib/lib$lib.a" 2>/dev/null | awk 'NF==3{print $3}' |
                         sort -u) | c++filt |
              grep -vE "$os_cc|^_fini\$|^_init\$" ||
              true)
    if [ -n "$missing" ]; then
      echo "pack-gpu-deps: lib$lib.a lacks symbols that $so exports:" >&2
      echo "$missing" | head -20 >&2
      exit 1
    fi
  done
}

main() {
  check_packages
  check_versions
  if [ "$force" = 0 ] && [ -f "$out/STAMP" ] && [ "$(stamp)" = "$(cat "$out/STAMP")" ]; then
    echo "pack-gpu-deps: $out is up to date ($(du -sh "$out" | cut -f1)); --force to rebuild"
    return 0
  fi
  local tmp="$out.tmp"
  rm -rf "$tmp"
  mkdir -p "$tmp"
  copy_headers "$tmp"
  copy_debian_static "$tmp"
  write_units "$tmp"
  write_makefile "$tmp/src"
  echo "pack-gpu-deps: compiling libfmt.a, libspdlog.a, libtomlplusplus.a (-j$jobs)"
  flock /tmp/ccscope-build.lock make -s -C "$tmp/src" -j"$jobs"
  check_symbols "$tmp"
  write_configs "$tmp"
  rm -rf "$tmp/src"
  stamp >"$tmp/STAMP"
  (cd "$tmp" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum >"$out.manifest")
  mv "$out.manifest" "$tmp/MANIFEST.sha256"
  rm -rf "$out"
  mv "$tmp" "$out"
  local kib
  kib=$(du -sk "$out" | cut -f1)
  echo "pack-gpu-deps: $out: $((kib / 1024)) MiB ($kib KiB), $(find "$out" -type f | wc -l) files"
  if [ "$kib" -gt $((64 * 1024)) ]; then
    echo "pack-gpu-deps: over the 64 MiB a device run can carry" >&2
    exit 1
  fi
}

main
