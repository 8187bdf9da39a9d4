#!/usr/bin/env bash
# Installs the Debian packages PhotoLedger builds against, when they are missing.
# Idempotent and quiet when everything is already installed.
#
# With --browser it also installs Chromium and chromedriver (Debian's chromium and chromium-driver),
# which the web view's tests drive headless. With --test-services it installs the browser too, and
# what the tests' throwaway services need: PostgreSQL (the server's scale-out store) and moto, an
# S3-compatible server from PyPI (into .build/test-python unless the python3 on PATH has it
# already). It then prints the Python to run moto with.
set -euo pipefail
cd "$(dirname "$0")/.."
# libvips-dev and the FFmpeg libraries decode media (libjpeg62-turbo-dev: libjpeg itself, for the
# JPEG structure check; libswscale turns a video's poster frame into
# RGB), libexiv2-dev reads the EXIF blocks libexif cannot; libvips-tools, ffmpeg and exiftool make
# and edit the media of tests, demo and benchmarks (vipsthumbnail is the thumbnail bench's baseline);
# libsodium-dev seals end-to-end encrypted libraries; libpq-dev is the PostgreSQL server store's.
# liblua5.4-dev builds the Lua module over libphotoledger; lua5.4, python3 (with pip), gcc, g++,
# make and binutils (readelf) run the host-language tests: C and C++ programs, Lua and Python
# scripts, the package installed with pip, the library's exported symbols.
packages=(libsqlite3-dev libssl-dev zlib1g-dev libzstd-dev libcurl4-openssl-dev libmicrohttpd-dev libexif-dev libpq-dev pkg-config openssl
    libsodium-dev libvips-dev libjpeg62-turbo-dev libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libexiv2-dev libvips-tools ffmpeg libimage-exiftool-perl
    liblua5.4-dev lua5.4 python3 python3-pip gcc g++ make binutils)
test_services=false
browser=false
for argument in "$@"; do
    case "$argument" in
        --test-services) test_services=true; browser=true ;;
        --browser) browser=true ;;
        *) echo "error: unknown option $argument (use --browser or --test-services)" >&2; exit 64 ;;
    esac
done
if $test_services; then packages+=(postgresql python3 python3-venv); fi
# Installs the packages of "$@" that are missing (apt-get update first, once).
updated=false
install_missing() {
    local missing=() package sudo=""
    for package in "$@"; do
        if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
            missing+=("$package")
        fi
    done
    [ ${#missing[@]} -gt 0 ] || return 0
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    echo "Installing ${missing[*]} …" >&2
    if ! $updated; then $sudo apt-get update -qq && updated=true; fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}
install_missing "${packages[@]}"
# The browser is for tests only: when it cannot be installed, its tests say so and are skipped.
if $browser && ! install_missing chromium chromium-driver; then
    echo "warning: chromium and chromium-driver could not be installed; the web view's browser tests will be skipped" >&2
fi
if ! command -v swift >/dev/null 2>&1; then
    echo "error: the Swift toolchain (6.x) is not on PATH; install it from swift.org and retry" >&2
    exit 1
fi
if $test_services; then
    python=python3
    if ! python3 -c 'import moto.server, flask, flask_cors' >/dev/null 2>&1; then
        python=.build/test-python/bin/python3
        if ! "$python" -c 'import moto.server, flask, flask_cors' >/dev/null 2>&1; then
            echo "Installing moto[server] (the S3 test server) into .build/test-python …" >&2
            mkdir -p .build
            /usr/bin/python3 -m venv .build/test-python
            .build/test-python/bin/pip install --quiet --disable-pip-version-check 'moto[server]>=5,<6'
        fi
    fi
    echo "$python"
fi
