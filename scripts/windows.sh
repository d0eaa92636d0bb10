#!/bin/bash
# Windows builds of the master series: cross-built with Debian's mingw-w64
# (x86_64-w64-mingw32) and CMake, run under Wine.
#
#   scripts/windows.sh [build]   toolchain, libraries, openvpn.exe + test_*.exe
#   scripts/windows.sh check     the unit tests, --version/--help and (with the
#                                series) tests/windows/t_wine_probe.sh, under Wine
#   scripts/windows.sh deps      only the libraries
#   scripts/windows.sh commits [FROM [TO]]
#                                every commit of the master series built on
#                                its own (-Werror), as upstream's CI builds
#                                each change with mingw
#
# Everything lives under build/win/:
#   apt/             private apt configuration (deb-src lists, own state and
#                    cache; /etc/apt is not touched), as scripts/fetch-base.sh
#   dl/              the Debian source packages of the libraries
#   deps/<key>/      their cross builds (OpenSSL, lzo, lz4, cmocka), one
#                    prefix per set of versions+compiler, reused while the key
#                    is the same (the cache: a second run only rebuilds what
#                    changed in openvpn)
#   src/{master,master-patched}   the pinned upstream commit, without and with
#                    patches/master/ (git am, every patch in `series`)
#   obj/{master,master-patched}   CMake build directories (Ninja)
#   bin/{master,master-patched}   openvpn.exe, test_*.exe
#   wineprefix/      WINEPREFIX for the checks
#   check/           logs and summary of `check`
#
# The master-patched variant is built whenever patches/master/series lists a
# patch; it is removed from bin/ when it does not.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
W="$top/build/win"
HOST=x86_64-w64-mingw32
JOBS=${JOBS:-2}
NICE=(nice -n 10)
PIN=3de926089fdebd79b9d25e80c31e45c1e044911d
PATCHES="$top/patches/master"
TAPDIR="$top/../shared/upstream/tap-windows6"
# the Debian source packages the libraries are built from
DEB_SRCS=(openssl lzo2 lz4 cmocka)

export WINEPREFIX="$W/wineprefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
export LC_ALL=C

log() { echo "windows: $*"; }
die() { echo "windows: $*" >&2; exit 1; }
now() { date +%s; }

# ---------------------------------------------------------------- toolchain
toolchain()
{
    local need=()
    command -v $HOST-gcc >/dev/null || need+=(mingw-w64)
    command -v wine >/dev/null && [ -x /usr/lib/wine/wine64 ] || need+=(wine64)
    command -v cmake >/dev/null || need+=(cmake)
    command -v ninja >/dev/null || need+=(ninja-build)
    command -v dpkg-source >/dev/null || need+=(dpkg-dev)
    command -v python3 >/dev/null || need+=(python3)
    command -v pkg-config >/dev/null || need+=(pkg-config)
    command -v make >/dev/null || need+=(make)
    command -v perl >/dev/null || need+=(perl)
    if [ ${#need[@]} -gt 0 ]; then
        [ "$(id -u)" = 0 ] || die "missing ${need[*]} (run as root, or apt-get install ${need[*]})"
        log "installing ${need[*]}"
        apt-get -q update >"$W/apt-update.log" 2>&1 || true
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" \
            >"$W/apt-install.log" 2>&1 || die "apt-get install failed (see $W/apt-install.log)"
    fi
}

# ---------------------------------------------------------------- private apt
# Same approach as scripts/fetch-base.sh: deb-src lists derived from the
# machine's own deb sources, own state and cache directories.
APT="$W/apt"
aptopts=(-o "Dir::Etc::SourceList=$APT/etc/sources.list"
         -o "Dir::Etc::SourceParts=$APT/etc/sources.list.d"
         -o "Dir::Etc::Preferences=$APT/etc/preferences"
         -o "Dir::Etc::PreferencesParts=$APT/etc/preferences.d"
         -o "Dir::State::Lists=$APT/lists"
         -o "Dir::State::status=/var/lib/dpkg/status"
         -o "Dir::Cache=$APT/cache"
         -o "Debug::NoLocking=1")

apt_setup()
{
    [ -f "$APT/updated" ] && return 0
    rm -rf "$APT"
    mkdir -p "$APT/etc/sources.list.d" "$APT/etc/preferences.d" "$APT/lists/partial" \
        "$APT/cache/archives/partial"
    : >"$APT/etc/sources.list"
    local f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' "$f" >>"$APT/etc/sources.list"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        sed -e 's/^Types:.*/Types: deb-src/' "$f" >"$APT/etc/sources.list.d/$(basename "$f")"
    done
    log "updating private deb-src lists ($APT)"
    apt-get "${aptopts[@]}" -q update >"$APT/update.log" 2>&1 ||
        die "apt-get update (private deb-src) failed, see $APT/update.log"
    touch "$APT/updated"
}

# src_versions PKG: the source versions in the lists, newest first
src_versions()
{
    apt-cache "${aptopts[@]}" showsrc "$1" 2>/dev/null |
        awk '/^Version:/ { print $2 }' | sort -Vr -u
}

# fetch_src PKG: unpacked source in $W/dl/PKG-VERSION; prints the directory
fetch_src()
{
    local pkg=$1 ver dir
    mkdir -p "$W/dl"
    ver=$(cat "$W/dl/$pkg.version" 2>/dev/null || true)
    if [ -z "$ver" ] || ! ls "$W/dl/${pkg}_"*.dsc >/dev/null 2>&1; then
        apt_setup >&2
        local vers v
        vers=$(src_versions "$pkg")
        [ -n "$vers" ] || die "no source package $pkg in the deb-src lists"
        : >"$W/dl/$pkg.log"
        ver=
        # newest first; a mirror may lack the newest one's .dsc (seen with
        # the security archive), then the next older one is taken
        for v in $vers; do
            log "downloading source $pkg=$v" >&2
            if (cd "$W/dl" && apt-get "${aptopts[@]}" -q source --download-only "$pkg=$v") \
                >>"$W/dl/$pkg.log" 2>&1; then
                ver=$v
                break
            fi
            log "  $pkg=$v could not be downloaded, trying an older one" >&2
            rm -f "$W/dl/${pkg}_${v#*:}".* "$W/dl/${pkg}_${v#*:}"-*
        done
        [ -n "$ver" ] || die "apt-get source $pkg failed for every version (see $W/dl/$pkg.log)"
        echo "$ver" >"$W/dl/$pkg.version"
    fi
    dir="$W/dl/$pkg-src"
    if [ ! -f "$dir/.unpacked-$ver" ]; then
        rm -rf "$dir"
        local dsc
        dsc=$(ls "$W/dl/${pkg}_${ver#*:}.dsc")
        dpkg-source --no-check -x "$dsc" "$dir" >>"$W/dl/$pkg.log" 2>&1 ||
            die "dpkg-source -x $dsc failed"
        touch "$dir/.unpacked-$ver"
    fi
    echo "$dir"
}

# ---------------------------------------------------------------- libraries
deps_key()
{
    local p
    {
        $HOST-gcc --version | head -n 1
        for p in "${DEB_SRCS[@]}"; do echo "$p $(cat "$W/dl/$p.version")"; done
        # the recipe itself: a change in deps_build invalidates the cache
        declare -f deps_build build_openssl build_lzo build_lz4 build_cmocka
    } | sha256sum | cut -c1-12
}

build_openssl()
{
    local src=$1 b="$W/deps/build/openssl"
    rm -rf "$b"; cp -a "$src" "$b"
    (cd "$b" &&
        "${NICE[@]}" ./Configure mingw64 --cross-compile-prefix=$HOST- \
            --prefix="$PREFIX" --libdir=lib --openssldir="$PREFIX/ssl" \
            no-shared no-tests no-module no-legacy \
            no-capieng enable-static-engine &&
        "${NICE[@]}" make -j"$JOBS" build_libs &&
        make install_dev) >"$W/deps/openssl.log" 2>&1 ||
        die "OpenSSL build failed (see $W/deps/openssl.log)"
}

build_lzo()
{
    local src=$1 b="$W/deps/build/lzo"
    rm -rf "$b"; cp -a "$src" "$b"
    (cd "$b" &&
        "${NICE[@]}" ./configure --host=$HOST --prefix="$PREFIX" --disable-shared --enable-static &&
        "${NICE[@]}" make -j"$JOBS" &&
        make install) >"$W/deps/lzo.log" 2>&1 ||
        die "lzo build failed (see $W/deps/lzo.log)"
}

build_lz4()
{
    local src=$1 b="$W/deps/build/lz4"
    rm -rf "$b"; cp -a "$src" "$b"
    (cd "$b" &&
        "${NICE[@]}" make -j"$JOBS" -C lib CC=$HOST-gcc AR=$HOST-ar WINDRES=$HOST-windres \
            TARGET_OS=MINGW liblz4.a &&
        install -d "$PREFIX/lib" "$PREFIX/include" "$PREFIX/lib/pkgconfig" &&
        install -m 644 lib/liblz4.a "$PREFIX/lib/" &&
        install -m 644 lib/lz4.h lib/lz4hc.h lib/lz4frame.h "$PREFIX/include/" &&
        ver=$(sed -n 's/^#define LZ4_VERSION_\(MAJOR\|MINOR\|RELEASE\)[[:space:]]*\([0-9]*\).*/\2/p' lib/lz4.h | paste -sd.) &&
        printf 'prefix=%s\nlibdir=${prefix}/lib\nincludedir=${prefix}/include\n\nName: lz4\nDescription: LZ4\nVersion: %s\nLibs: -L${libdir} -llz4\nCflags: -I${includedir}\n' \
            "$PREFIX" "$ver" >"$PREFIX/lib/pkgconfig/liblz4.pc") >"$W/deps/lz4.log" 2>&1 ||
        die "lz4 build failed (see $W/deps/lz4.log)"
}

build_cmocka()
{
    local src=$1 b="$W/deps/build/cmocka"
    rm -rf "$b"; mkdir -p "$b"
    ("${NICE[@]}" cmake -S "$src" -B "$b" -G Ninja \
            -DCMAKE_SYSTEM_NAME=Windows -DCMAKE_C_COMPILER=$HOST-gcc \
            -DCMAKE_RC_COMPILER=$HOST-windres \
            -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$PREFIX" \
            -DBUILD_SHARED_LIBS=OFF -DWITH_STATIC_LIB=ON -DWITH_EXAMPLES=OFF \
            -DUNIT_TESTING=OFF -DPICKY_DEVELOPER=OFF &&
        "${NICE[@]}" ninja -C "$b" -j"$JOBS" &&
        ninja -C "$b" install &&
        # static only: cmocka 1.1's Windows header has no dllimport, the
        # test programs then need no cmocka.dll beside them
        mv "$PREFIX/lib/libcmocka-static.a" "$PREFIX/lib/libcmocka.a" &&
        rm -rf "$PREFIX/lib/libcmocka.dll.a" "$PREFIX/bin/cmocka.dll" "$PREFIX/lib/cmake/cmocka") \
        >"$W/deps/cmocka.log" 2>&1 ||
        die "cmocka build failed (see $W/deps/cmocka.log)"
}

deps_build()
{
    local p srcs=() key t0
    for p in "${DEB_SRCS[@]}"; do srcs+=("$(fetch_src "$p")"); done
    key=$(deps_key)
    PREFIX="$W/deps/$key"
    if [ -f "$PREFIX/.complete" ]; then
        log "libraries: cached in build/win/deps/$key ($(for p in "${DEB_SRCS[@]}"; do printf '%s %s  ' "$p" "$(cat "$W/dl/$p.version")"; done))"
        return 0
    fi
    t0=$(now)
    rm -rf "$PREFIX" "$W/deps/build"; mkdir -p "$PREFIX" "$W/deps/build"
    log "libraries: building into build/win/deps/$key"
    log "  lzo2 $(cat "$W/dl/lzo2.version")";     build_lzo "${srcs[1]}"
    log "  lz4 $(cat "$W/dl/lz4.version")";       build_lz4 "${srcs[2]}"
    log "  cmocka $(cat "$W/dl/cmocka.version")"; build_cmocka "${srcs[3]}"
    log "  openssl $(cat "$W/dl/openssl.version") (a few minutes)"; build_openssl "${srcs[0]}"
    rm -rf "$W/deps/build"
    for p in "${DEB_SRCS[@]}"; do echo "$p $(cat "$W/dl/$p.version")"; done >"$PREFIX/VERSIONS"
    touch "$PREFIX/.complete"
    # older prefixes are no longer used
    for p in "$W"/deps/*/; do
        [ "$(basename "$p")" = "$key" ] || rm -rf "$p"
    done
    log "libraries: built in $(( $(now) - t0 )) s"
}

# ---------------------------------------------------------------- openvpn
series_patches()
{
    [ -f "$PATCHES/series" ] || return 0
    sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$PATCHES/series"
}

upstream_fetch()
{
    local mirror="$top/build/src/openvpn.git"
    if git -C "$mirror" cat-file -e "$PIN^{commit}" 2>/dev/null; then
        return 0
    fi
    # the project's own way (scripts/base.sh); fetch-git.sh directly if the
    # base description cannot be loaded
    (cd "$top" && bash -c '. scripts/base.sh; top=$PWD; base_load master && base_fetch') ||
        "$top/scripts/fetch-git.sh" "$PIN" || die "cannot fetch upstream commit $PIN"
}

# variant_info VARIANT: sets ORIGIN (a git repository), BASEREV (commit)
# and VPATCHES (the patch directory, empty for none)
variant_info()
{
    case $1 in
        master)         ORIGIN="$top/build/src/openvpn.git"; BASEREV=$PIN; VPATCHES= ;;
        master-patched) ORIGIN="$top/build/src/openvpn.git"; BASEREV=$PIN; VPATCHES=$PATCHES ;;
        2.6-patched)    # the 2.6 series on its base (the tag "upstream" of
                        # the work tree: Debian's 2.6.14-0+deb12u2 source)
                        ORIGIN="$top/build/openvpn"
                        BASEREV=$(git -C "$ORIGIN" rev-parse upstream^{commit})
                        VPATCHES="$top/patches/2.6" ;;
        *) die "unknown variant $1" ;;
    esac
}

# patch_list DIR: the patches of DIR/series, one path a line
patch_list()
{
    [ -n "$1" ] && [ -f "$1/series" ] || return 0
    sed -e 's/#.*//' -e '/^[[:space:]]*$/d' -e "s|^|$1/|" "$1/series"
}

# tree_of VARIANT: the source tree (build/win/src/T) and build directory
# (build/win/obj/T) it is built in.  master and master-patched share one:
# switching it between the two rebuilds only what the series touches
tree_of()
{
    case $1 in
        master|master-patched) echo master ;;
        *) echo "$1" ;;
    esac
}

# variant_want VARIANT: a stamp of what the variant is built from
variant_want()
{
    local p
    variant_info "$1"
    { echo "$BASEREV"; patch_list "$VPATCHES" | while read -r p; do
        sha256sum <"$p"; done; } | sha256sum | cut -c1-16
}

# prepare_tree VARIANT: its source tree at its base (+ its series)
prepare_tree()
{
    local v=$1 d want have p
    d="$W/src/$(tree_of "$v")"
    want=$(variant_want "$v")
    variant_info "$v"
    have=$(cat "$d/.git/win-stamp" 2>/dev/null || true)
    if [ -d "$d/.git" ] && [ "$have" = "$want" ] && [ -z "$(git -C "$d" status --porcelain)" ]; then
        return 0
    fi
    if [ ! -d "$d/.git" ]; then
        mkdir -p "$W/src"
        git clone -q "$ORIGIN" "$d" 2>/dev/null
    fi
    git -C "$d" am --abort >/dev/null 2>&1 || true
    git -C "$d" fetch -q "$ORIGIN" "$BASEREV" 2>/dev/null || true
    # reset keeps unchanged files' timestamps, so the build stays incremental
    git -C "$d" checkout -q --detach "$BASEREV"
    git -C "$d" reset -q --hard "$BASEREV"
    git -C "$d" clean -qfdx
    if [ -n "$VPATCHES" ]; then
        local list=()
        while read -r p; do list+=("$p"); done < <(patch_list "$VPATCHES")
        git -C "$d" -c user.name=windows-build -c user.email=windows@localhost \
            am -q --committer-date-is-author-date "${list[@]}" >"$W/src/$v-am.log" 2>&1 ||
            die "git am of ${VPATCHES#"$top"/}/ failed on $BASEREV (see $W/src/$v-am.log)"
        log "$v: applied ${#list[@]} patch(es) of ${VPATCHES#"$top"/}/series"
    fi
    echo "$want" >"$d/.git/win-stamp"
}

# cmake_configure SRC OBJ LOG: configure the build directory OBJ for the
# tree SRC (in place when it was configured the same way before)
cmake_configure()
{
    local src=$1 obj=$2 log=$3
    mkdir -p "$obj"
    # the toolchain and the prefix come from the command line; upstream's
    # preset would take them from vcpkg
    # tap-windows.h (MIT) from shared/upstream/tap-windows6.  Debian 12's
    # mingw-w64 (10.0) headers lack ERROR_CANT_WAIT, which openvpnserv's
    # interactive.c uses (upstream CI's newer mingw-w64 has it): define it
    # with winerror.h's value when the header does not
    local cflags="-I$TAPDIR"
    if ! echo '#include <windows.h>
int x = ERROR_CANT_WAIT;' | $HOST-gcc -x c -fsyntax-only - >/dev/null 2>&1; then
        cflags="$cflags -DERROR_CANT_WAIT=554L"
    fi
    local config="$PREFIX $cflags"
    # pkg-config must see the prefix's .pc files only, in every CMake run:
    # also in the one ninja starts by itself when the variant switch changed
    # a CMakeLists.txt.  With the host's pkg-config path, that re-run finds
    # Debian's Linux cmocka.pc (whose -I/usr/include pkg-config drops) and
    # test_openvpnserv, the one unit test that gets cmocka's include
    # directory from cmocka alone, no longer finds cmocka.h.  So the
    # environment is set for ninja too, and CMake is run on every build
    # (in place, cheap) to repair a cache an earlier run got wrong.
    # Upstream's USE_WERROR is on by default: warnings fail the build.
    export PKG_CONFIG_LIBDIR="$PREFIX/lib/pkgconfig" PKG_CONFIG_PATH=
    if [ ! -f "$obj/build.ninja" ] || [ "$(cat "$obj/.config" 2>/dev/null)" != "$config" ]; then
        rm -rf "$obj"; mkdir -p "$obj"
    fi
    (cd "$obj" && \
        "${NICE[@]}" cmake -S "$src" -B "$obj" -G Ninja \
            -DCMAKE_SYSTEM_NAME=Windows \
            -DCMAKE_C_COMPILER=$HOST-gcc -DCMAKE_CXX_COMPILER=$HOST-g++ \
            -DCMAKE_RC_COMPILER=$HOST-windres \
            -DCMAKE_FIND_ROOT_PATH="$PREFIX" \
            -DCMAKE_FIND_ROOT_PATH_MODE_PROGRAM=NEVER \
            -DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY \
            -DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY \
            -DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=ONLY \
            -DCMAKE_BUILD_TYPE=Release \
            -DOPENSSL_ROOT_DIR="$PREFIX" -DOPENSSL_USE_STATIC_LIBS=ON \
            -DCMAKE_C_FLAGS="$cflags" \
            -DENABLE_PKCS11=OFF \
            -DBUILD_TESTING=ON) >"$log" 2>&1 || return 1
    echo "$config" >"$obj/.config"
}

build_variant()
{
    local v=$1 src obj bin="$W/bin/$1" t0 rc=0 want
    src="$W/src/$(tree_of "$v")" obj="$W/obj/$(tree_of "$v")"
    t0=$(now)
    want="$(variant_want "$v") $PREFIX"
    if [ -f "$bin/openvpn.exe" ] && [ "$(cat "$bin/.stamp" 2>/dev/null)" = "$want" ]; then
        log "$v: up to date in build/win/bin/$v/ (same base, series and libraries)"
        return 0
    fi
    prepare_tree "$v"
    cmake_configure "$src" "$obj" "$W/obj/$v-cmake.log" ||
        { echo "windows: $v: cmake failed (see $W/obj/$v-cmake.log)" >&2; return 1; }
    # -k 0: one target that fails (say a unit test that does not link)
    # must not keep the others from being built and checked
    # GIT_DIR: upstream's git-version.py asks git in the build directory,
    # which is inside this project's repository; without it openvpn.exe
    # --version would name this project's commit, not the openvpn one
    GIT_DIR="$src/.git" "${NICE[@]}" ninja -C "$obj" -k 0 -j"$JOBS" >"$W/obj/$v-build.log" 2>&1 || rc=$?
    rm -rf "$bin"; mkdir -p "$bin"
    if [ $rc -ne 0 ]; then
        grep -aE '^FAILED: |error:|undefined reference' "$W/obj/$v-build.log" | head -20 | cut -c1-300 >&2
        grep -a '^FAILED: ' "$W/obj/$v-build.log" | sed 's/^FAILED: //' >"$bin/FAILED"
        echo "windows: $v: build FAILED for: $(tr '\n' ' ' <"$bin/FAILED")(see $W/obj/$v-build.log)" >&2
    fi
    # only what this variant's build graph makes: the shared build
    # directory still holds the other variant's test_oob.exe after a
    # switch back to unpatched master
    local out
    while read -r out; do
        case $(basename "$out") in
            openvpn.exe|openvpnserv.exe|tapctl.exe|test_*.exe|*.dll)
                if [ -f "$obj/$out" ]; then cp "$obj/$out" "$bin/"; fi ;;
        esac
    done < <(ninja -C "$obj" -t targets all 2>/dev/null |
        sed -n 's/^\([^:]*\.\(exe\|dll\)\): C_.*_LINKER_.*/\1/p')
    # an executable ninja would still link is stale (left from the other
    # variant in the shared build directory, or an object of it failed):
    # not a result of this variant
    if [ $rc -ne 0 ]; then
        local x
        for x in $(ninja -C "$obj" -n 2>/dev/null | sed -n 's/.*Linking C executable \(.*\.exe\).*/\1/p'); do
            x=$(basename "$x")
            if [ -f "$bin/$x" ]; then
                rm -f "$bin/$x"
                grep -qx "$x" "$bin/FAILED" || echo "$x" >>"$bin/FAILED"
            fi
        done
        echo "windows: $v: not built (stale or failed): $(tr '\n' ' ' <"$bin/FAILED")" >&2
    fi
    # the unit tests' input files, as of this variant (srcdir for the tests)
    # (test_misc reads ../../../COPYRIGHT.GPL from there)
    mkdir -p "$bin/src/tests/unit_tests"
    cp -a "$src/tests/unit_tests/openvpn" "$bin/src/tests/unit_tests/"
    cp "$src/COPYRIGHT.GPL" "$bin/src/"
    # a failed build is not up to date: the next run tries again
    [ $rc -ne 0 ] || echo "$want" >"$bin/.stamp"
    local n
    n=$(ls "$bin" | grep -c '^test_.*\.exe$' || true)
    log "$v: built in $(( $(now) - t0 )) s: $(ls "$bin" | grep -v '^test_\|^src$\|^FAILED$' | tr '\n' ' ')+ $n unit test program(s) in build/win/bin/$v/"
    return $rc
}

# master always; master-patched when patches/master/series lists a patch;
# 2.6-patched (the 2.6 series on its Debian base, from the work tree
# build/openvpn's tag "upstream") only with WIN_26=1
variants()
{
    echo master
    if [ -n "$(series_patches)" ]; then echo master-patched; fi
    if [ "${WIN_26:-0}" = 1 ] && git -C "$top/build/openvpn" rev-parse -q --verify upstream^{commit} >/dev/null 2>&1; then
        echo 2.6-patched
    fi
}

cmd_build()
{
    local t0 v fail=0
    t0=$(now)
    mkdir -p "$W"
    toolchain
    upstream_fetch
    [ -f "$TAPDIR/tap-windows.h" ] || die "no $TAPDIR/tap-windows.h"
    deps_build
    for v in $(variants); do build_variant "$v" || fail=1; done
    if [ -z "$(series_patches)" ]; then
        log "patches/master/series lists no patch: only unpatched master built"
        rm -rf "$W/bin/master-patched"
    fi
    local dt=$(( $(now) - t0 ))
    log "build: $dt s in all"
    echo "$dt" >"$W/last-build-seconds"
    return $fail
}

# ---------------------------------------------------------------- checks
CHK="$W/check"

wine_init()
{
    if [ ! -f "$WINEPREFIX/system.reg" ]; then
        log "creating WINEPREFIX build/win/wineprefix"
        wineboot --init >"$W/wineboot.log" 2>&1 || die "wineboot failed (see $W/wineboot.log)"
        # the user's "MY" certificate store exists on every Windows, not in
        # a fresh prefix (test_cryptoapi opens it with OPEN_EXISTING)
        wine reg add 'HKCU\Software\Microsoft\SystemCertificates\MY' /f >>"$W/wineboot.log" 2>&1 || true
    fi
    wineserver -w 2>/dev/null || true
}

# run_unit VARIANT: every test_*.exe of the variant; prints and records
run_unit()
{
    local v=$1 bin="$W/bin/$1" t exe rc n p f srcdir pass=0 failn=0
    srcdir=$(winepath -w "$bin/src/tests/unit_tests/openvpn" 2>/dev/null | tr -d '\r')
    mkdir -p "$CHK/$v"
    : >"$CHK/$v/unit.txt"
    for exe in "$bin"/test_*.exe; do
        [ -f "$exe" ] || continue
        t=$(basename "$exe" .exe)
        rc=0
        (cd "$bin/src/tests/unit_tests/openvpn" &&
            srcdir="$srcdir" timeout --kill-after=10 300 wine "$exe") \
            >"$CHK/$v/$t.log" 2>&1 </dev/null || rc=$?
        # cmocka's summary
        p=$( (grep -aoE '\[  PASSED  \] [0-9]+' "$CHK/$v/$t.log" || true) | awk '{s+=$NF} END {print s+0}')
        f=$( (grep -aoE '\[  FAILED  \] [0-9]+ test' "$CHK/$v/$t.log" || true) | awk '{s+=$(NF-1)} END {print s+0}')
        n=$(grep -acE '^\[ RUN      \]' "$CHK/$v/$t.log" || true)
        echo "$t rc=$rc run=$n passed=$p failed=$f" >>"$CHK/$v/unit.txt"
    done
}

cmd_check()
{
    local v t0 fail=0
    t0=$(now)
    wine_init
    rm -rf "$CHK"; mkdir -p "$CHK"
    local vs=()
    for v in master master-patched 2.6-patched; do [ -d "$W/bin/$v" ] && vs+=("$v"); done
    [ ${#vs[@]} -gt 0 ] || die "nothing built: run scripts/windows.sh build (make windows) first"
    [ -d "$W/bin/master-patched" ] || [ -z "$(series_patches)" ] ||
        die "patches/master/series lists patches but build/win/bin/master-patched is missing: make windows"
    for v in "${vs[@]}"; do run_unit "$v"; done
    python3 "$top/tests/windows/unit_report.py" "$CHK" "${vs[@]}" | tee "$CHK/unit-summary.txt" ||
        fail=1
    # --version / --help
    local okn=0 badn=0
    for v in "${vs[@]}"; do
        local exe="$W/bin/$v/openvpn.exe" rc f
        if [ -s "$W/bin/$v/FAILED" ]; then
            while read -r f; do
                echo "not ok - $v: $f did not build (see build/win/obj/$v-build.log)"; badn=$((badn+1))
            done <"$W/bin/$v/FAILED"
        fi
        [ -f "$exe" ] || continue
        rc=0; wine "$exe" --version >"$CHK/$v/version.txt" 2>&1 </dev/null || rc=$?
        if grep -aq '^OpenVPN .* Windows ' "$CHK/$v/version.txt"; then
            echo "ok - $v: openvpn.exe --version: $(head -n 1 "$CHK/$v/version.txt" | tr -d '\r' | cut -c1-100) (exit $rc)"; okn=$((okn+1))
        else
            echo "not ok - $v: openvpn.exe --version (exit $rc): $(head -n 3 "$CHK/$v/version.txt")"; badn=$((badn+1))
        fi
        rc=0; wine "$exe" --help >"$CHK/$v/help.txt" 2>&1 </dev/null || rc=$?
        if grep -aq -- '--remote host' "$CHK/$v/help.txt"; then
            echo "ok - $v: openvpn.exe --help ($(wc -l <"$CHK/$v/help.txt") lines, exit $rc)"; okn=$((okn+1))
        else
            echo "not ok - $v: openvpn.exe --help (exit $rc)"; badn=$((badn+1))
        fi
        local o
        for o in --server-probe-reply --server-probe-only --server-probe-persist --server-probe; do
            if grep -aq -- "^$o\b" "$CHK/$v/help.txt" ||
                grep -aqE -- "^$o( |$)" "$CHK/$v/help.txt"; then
                if [ "$v" = master-patched ]; then
                    echo "ok - $v: --help shows $o"; okn=$((okn+1))
                else
                    echo "not ok - $v: unpatched --help shows $o"; badn=$((badn+1))
                fi
            else
                if [ "$v" = master-patched ]; then
                    if series_has_option "$o"; then
                        echo "not ok - $v: --help does not show $o"; badn=$((badn+1))
                    else
                        echo "# $v: --help does not show $o: the series (as of now) does not add it yet"
                    fi
                else
                    echo "ok - $v: --help does not show $o (unpatched)"; okn=$((okn+1))
                fi
            fi
        done
    done | tee "$CHK/exe.txt"
    grep -q '^not ok' "$CHK/exe.txt" && fail=1
    # the probe end to end
    if [ -d "$W/bin/master-patched" ]; then
        local rc=0
        bash "$top/tests/windows/t_wine_probe.sh" 2>&1 | tee "$CHK/t_wine_probe.log" || rc=${PIPESTATUS[0]}
        case $rc in
            0) ;;
            77) log "t_wine_probe.sh skipped: $(grep -a '^# SKIP' "$CHK/t_wine_probe.log" | head -n 1)";;
            *) fail=1;;
        esac
    else
        log "no patched build: t_wine_probe.sh not run"
    fi
    local dt=$(( $(now) - t0 )) up uf uk ep ef pp pf
    read -r up uf uk <"$CHK/unit-counts" || { up=0 uf=1 uk=0; }
    ep=$(grep -c '^ok' "$CHK/exe.txt" || true)
    ef=$(grep -c '^not ok' "$CHK/exe.txt" || true)
    pp=$(grep -c '^ok' "$CHK/t_wine_probe.log" 2>/dev/null || true)
    pf=$(grep -c '^not ok' "$CHK/t_wine_probe.log" 2>/dev/null || true)
    {
        echo "check-windows summary (${vs[*]}):"
        echo "  unit test programs: $up passed, $uf failed, $uk failing under Wine only (listed above with the reason)"
        echo "  openvpn.exe --version/--help: $ep passed, $ef failed"
        if [ -f "$CHK/t_wine_probe.log" ]; then
            echo "  t_wine_probe.sh: $pp passed, $pf failed"
        fi
        echo "  time: check $dt s; last build $(cat "$W/last-build-seconds" 2>/dev/null || echo '?') s"
        echo "$((up + ep + pp)) passed, $((uf + ef + pf)) failed"
    } | tee "$CHK/summary.txt"
    wineserver -k 2>/dev/null || true
    return $fail
}

# series_has_option --opt: does the series add this option (its usage text)?
series_has_option()
{
    local p
    while read -r p; do
        grep -q -- "^+.*\"$1[ \\\\\"]" "$PATCHES/$p" && return 0
    done < <(series_patches)
    return 1
}

# commits [FROM [TO]]: every commit of the master series (patches/master/,
# the Nth patch applied on the N-1 before it) built on its own with
# mingw-w64 and upstream's -Werror: openvpn.exe and the unit test
# programs.  One tree and build directory (build/win/src/commits,
# build/win/obj/commits): git am keeps the time stamps of files a patch
# does not touch, so ninja rebuilds only what each commit changes.
# Logs: build/win/commits/NNNN.log; a summary line per commit.
cmd_commits()
{
    local d="$W/src/commits" obj="$W/obj/commits" out="$W/commits" p i from to
    local list=() pass=0 fail=0 t0 t1 rc
    mkdir -p "$W" "$out"
    toolchain
    upstream_fetch
    [ -f "$TAPDIR/tap-windows.h" ] || die "no $TAPDIR/tap-windows.h"
    deps_build
    while read -r p; do list+=("$p"); done < <(patch_list "$PATCHES")
    [ ${#list[@]} -gt 0 ] || die "patches/master/series lists no patch"
    from=${1:-1} to=${2:-${#list[@]}}
    [ "$from" -ge 1 ] && [ "$to" -le ${#list[@]} ] && [ "$from" -le "$to" ] ||
        die "commits: FROM TO must be within 1..${#list[@]}"
    t0=$(now)
    [ -d "$d/.git" ] || git clone -q "$top/build/src/openvpn.git" "$d" 2>/dev/null
    git -C "$d" am --abort >/dev/null 2>&1 || true
    git -C "$d" fetch -q "$top/build/src/openvpn.git" "$PIN" 2>/dev/null || true
    git -C "$d" checkout -q --detach "$PIN"
    git -C "$d" reset -q --hard "$PIN"
    git -C "$d" clean -qfdx
    if [ "$from" -gt 1 ]; then
        git -C "$d" -c user.name=windows-build -c user.email=windows@localhost \
            am -q "${list[@]:0:$((from - 1))}" >"$out/am.log" 2>&1 ||
            die "git am of the patches before $from failed (see $out/am.log)"
    fi
    rm -f "$out"/[0-9]*.log
    for ((i = from; i <= to; i++)); do
        p=${list[$((i - 1))]}
        t1=$(now)
        local log
        log="$out/$(printf %04d "$i").log"
        if ! git -C "$d" -c user.name=windows-build -c user.email=windows@localhost \
            am -q "$p" >"$log" 2>&1; then
            echo "FAIL $(basename "$p") (git am)"
            die "git am of $(basename "$p") failed (see $log)"
        fi
        rc=0
        cmake_configure "$d" "$obj" "$log.cmake" || rc=$?
        if [ $rc -eq 0 ]; then
            GIT_DIR="$d/.git" "${NICE[@]}" ninja -C "$obj" -k 0 -j"$JOBS" >>"$log" 2>&1 || rc=$?
        fi
        if [ $rc -eq 0 ]; then
            pass=$((pass + 1))
            echo "PASS $(basename "$p") ($(( $(now) - t1 )) s)"
        else
            fail=$((fail + 1))
            echo "FAIL $(basename "$p") (see ${log#"$top"/})"
            grep -aE '^FAILED: |error:|undefined reference' "$log" | head -5 | cut -c1-200 | sed 's/^/     /'
        fi
    done
    log "commits $from..$to: $pass built, $fail failed, in $(( $(now) - t0 )) s"
    [ $fail -eq 0 ]
}

case ${1:-build} in
    build) cmd_build ;;
    deps)  mkdir -p "$W"; toolchain; deps_build ;;
    check) cmd_check ;;
    commits) shift; cmd_commits "$@" ;;
    *) die "usage: scripts/windows.sh [build|deps|check|commits [FROM [TO]]]" ;;
esac
