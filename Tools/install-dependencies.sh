#!/usr/bin/env bash
# Installs the Debian packages PhotoLedger builds against, when they are missing.
# Idempotent and quiet when everything is already installed.
set -euo pipefail
# libvips-dev and the FFmpeg libraries decode media (libswscale turns a video's poster frame into
# RGB), libexiv2-dev reads the EXIF blocks libexif cannot; libvips-tools, ffmpeg and exiftool
# make and edit the media of tests, demo and benchmarks (and vipsthumbnail is the thumbnail
# benchmark's baseline).
packages=(libsqlite3-dev libssl-dev zlib1g-dev libzstd-dev libcurl4-openssl-dev libmicrohttpd-dev libexif-dev pkg-config openssl
    libvips-dev libavformat-dev libavcodec-dev libavutil-dev libswscale-dev libexiv2-dev libvips-tools ffmpeg libimage-exiftool-perl)
missing=()
for package in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
        missing+=("$package")
    fi
done
if [ ${#missing[@]} -gt 0 ]; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    echo "Installing ${missing[*]} …" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! command -v swift >/dev/null 2>&1; then
    echo "error: the Swift toolchain (6.x) is not on PATH; install it from swift.org and retry" >&2
    exit 1
fi
