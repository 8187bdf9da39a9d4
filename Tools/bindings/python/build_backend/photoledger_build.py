"""A PEP 517 build backend for the photoledger package, with no requirement but the standard library.

The package is pure Python (ctypes over libphotoledger), so its wheel is the package's files, its
metadata and their hashes: pip installs it offline, with or without build isolation.
"""

import base64
import hashlib
import os
import tarfile
import zipfile

NAME = "photoledger"
VERSION = "1.0.0"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TAG = "py3-none-any"


def _metadata():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as readme:
        description = readme.read()
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {NAME}\n"
        f"Version: {VERSION}\n"
        "Summary: PhotoLedger from Python: the photo library's C interface (libphotoledger.so.1) through ctypes\n"
        "Requires-Python: >=3.9\n"
        "Description-Content-Type: text/markdown\n"
        "\n" + description
    )


def _package_files():
    package = os.path.join(ROOT, NAME)
    for name in sorted(os.listdir(package)):
        if name.endswith(".py"):
            yield os.path.join(package, name), f"{NAME}/{name}"


def _record_line(path, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _dist_info_files():
    dist_info = f"{NAME}-{VERSION}.dist-info"
    wheel = f"Wheel-Version: 1.0\nGenerator: photoledger_build\nRoot-Is-Purelib: true\nTag: {TAG}\n"
    return dist_info, {f"{dist_info}/METADATA": _metadata().encode(), f"{dist_info}/WHEEL": wheel.encode()}


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    dist_info, files = _dist_info_files()
    for path, data in files.items():
        target = os.path.join(metadata_directory, path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "wb") as file:
            file.write(data)
    return dist_info


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    filename = f"{NAME}-{VERSION}-{TAG}.whl"
    dist_info, metadata = _dist_info_files()
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        for source, path in _package_files():
            with open(source, "rb") as file:
                data = file.read()
            wheel.writestr(path, data)
            records.append(_record_line(path, data))
        for path, data in metadata.items():
            wheel.writestr(path, data)
            records.append(_record_line(path, data))
        records.append(f"{dist_info}/RECORD,,")
        wheel.writestr(f"{dist_info}/RECORD", "\n".join(records) + "\n")
    return filename


def build_sdist(sdist_directory, config_settings=None):
    filename = f"{NAME}-{VERSION}.tar.gz"
    base = f"{NAME}-{VERSION}"
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz") as sdist:
        for name in ["pyproject.toml", "README.md", "build_backend/photoledger_build.py"]:
            sdist.add(os.path.join(ROOT, name), f"{base}/{name}")
        for source, path in _package_files():
            sdist.add(source, f"{base}/{path}")
    return filename
