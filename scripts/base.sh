# shellcheck shell=bash
# What a base of the series is, for the scripts that take one (make-tree,
# fetch, export, series-check, check-commits, build, style).  Sourced.
#
# A base is a directory patches/NAME/ with the series on that base (its
# *.patch files and `series`) and a file BASE of one line that pins the
# base's source:
#
#   debian PACKAGE VERSION        a Debian source package, sha256-pinned in
#                                 scripts/fetch-base.sh (apt-get source)
#   git COMMIT [REF]              a full git commit id (and the ref it was
#                                 taken from), from a git URL or bundle
#                                 (scripts/fetch-git.sh); "git" may be
#                                 left out
#
# So a third base (say v2.7.6) is one more directory and one line:
#   mkdir patches/2.7 && echo "git 327a33de2aa21883f3d206774c1d0801b244fce6 v2.7.6" >patches/2.7/BASE
#
# base_load NAME sets
#   BASE_NAME BASE_KIND BASE_PIN BASE_REF  from patches/NAME/BASE
#   PATCHES      patches/NAME
#   WT           the work tree: build/openvpn for 2.6 (the distributions'
#                series, what tests, demo and benchmarks use), else
#                build/openvpn-NAME
#   BIN_PATCHED, BIN_BASELINE   build/bin/openvpn[-NAME], build/bin/openvpn[-NAME]-baseline
#   OBJ_PATCHED, OBJ_BASELINE   build/obj/[NAME-]patched, build/obj/[NAME-]baseline
# BASE_DEFAULT is 2.6.

BASE_DEFAULT=2.6

# the files autoreconf generates, left out when a commit's source is
# copied over a configured tree (check-commits, build.sh's series-before
# variants): the tree keeps its own, since mixing a tarball's copies with
# autoreconf's output breaks automake's version check
AUTOTOOLS_EXCLUDES=(--exclude=Makefile.in --exclude=/configure --exclude=/aclocal.m4
    --exclude=/config.h.in --exclude=/ltmain.sh --exclude=/compile
    --exclude=/config.guess --exclude=/config.sub --exclude=/depcomp
    --exclude=/install-sh --exclude=/missing --exclude=/test-driver
    --exclude=/ar-lib --exclude=/m4/libtool.m4 --exclude='/m4/lt*.m4')

# base_names: every base there is (a directory of patches/ with a BASE file)
base_names()
{
    local d
    for d in "$top"/patches/*/BASE; do
        [ -f "$d" ] || continue
        basename "$(dirname "$d")"
    done
}

base_load()
{
    local name=${1:-${BASE:-$BASE_DEFAULT}} line
    BASE_NAME=$name
    PATCHES="$top/patches/$name"
    if [ ! -f "$PATCHES/BASE" ]; then
        echo "base: no base '$name' (patches/$name/BASE is missing; bases: $(base_names | tr '\n' ' '))" >&2
        return 1
    fi
    line=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$PATCHES/BASE" | head -n 1)
    # a line that starts with a full commit id is a git base
    [[ $line =~ ^[0-9a-f]{40}([[:space:]]|$) ]] && line="git $line"
    read -r BASE_KIND BASE_PIN BASE_REF <<<"$line"
    case $BASE_KIND in
        debian) read -r _ BASE_PACKAGE BASE_VERSION <<<"$line"
                BASE_PIN=$BASE_VERSION BASE_REF=$BASE_PACKAGE ;;
        git)    if ! [[ $BASE_PIN =~ ^[0-9a-f]{40}$ ]]; then
                    echo "base: patches/$name/BASE: '$BASE_PIN' is not a full commit id" >&2
                    return 1
                fi ;;
        *)      echo "base: patches/$name/BASE: unknown kind '$BASE_KIND' (debian or git)" >&2
                return 1 ;;
    esac
    if [ "$name" = "$BASE_DEFAULT" ]; then
        WT="$top/build/openvpn"
        BIN_PATCHED="$top/build/bin/openvpn"
        BIN_BASELINE="$top/build/bin/openvpn-baseline"
        OBJ_PATCHED="$top/build/obj/patched"
        OBJ_BASELINE="$top/build/obj/baseline"
    else
        WT="$top/build/openvpn-$name"
        BIN_PATCHED="$top/build/bin/openvpn-$name"
        BIN_BASELINE="$top/build/bin/openvpn-$name-baseline"
        OBJ_PATCHED="$top/build/obj/$name-patched"
        OBJ_BASELINE="$top/build/obj/$name-baseline"
    fi
    BASE=$name
    export BASE BASE_NAME BASE_KIND BASE_PIN BASE_REF PATCHES WT BIN_PATCHED \
        BIN_BASELINE OBJ_PATCHED OBJ_BASELINE
}

# base_fetch: make the base's source available (cached under build/src)
base_fetch()
{
    case $BASE_KIND in
        debian) "$top/scripts/fetch-base.sh" ;;
        git)    "$top/scripts/fetch-git.sh" "$BASE_PIN" ;;
    esac
}
