"""A PEP 517 and PEP 660 build backend for the drover package, standard library only.

pip builds a package in an isolated environment into which it first installs the backend named
in pyproject.toml; with setuptools that means a download from PyPI. This backend lives in the
source tree (``backend-path``), so building needs nothing but Python: ``pip install .`` and
``pip install -e .`` work offline.

It packs the one pure-Python package (``drover``, with ``py.typed``) into a ``py3-none-any``
wheel with its ``.dist-info`` (METADATA, WHEEL, entry_points.txt, top_level.txt, RECORD); the
editable wheel holds a ``.pth`` file that puts this folder on ``sys.path``; the sdist holds the
package, its tests, this backend, pyproject.toml and the README. Project metadata is read from
pyproject.toml's ``[project]`` table, the version from ``drover/__init__.py``.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "drover"
TAG = "py3-none-any"
# The sdist's contents besides the package: what building a wheel from it needs, and the tests.
SDIST_EXTRA = ("pyproject.toml", "README.md", "_build/backend.py", "tests")


def _project() -> dict:
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        doc = _parse_toml(text)
    else:
        doc = tomllib.loads(text)
    return doc["project"]


def _parse_toml(text: str) -> dict:
    """The subset of TOML pyproject.toml uses: [tables], and keys whose values are strings or
    one-line lists of strings."""
    doc: dict = {}
    table = doc
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()  # no "#" inside strings in this subset
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            table = doc
            for part in line[1:-1].split("."):
                table = table.setdefault(part.strip(), {})
            continue
        key, _, value = line.partition("=")
        value = value.strip()
        if value.startswith("["):
            table[key.strip()] = re.findall(r'"((?:[^"\\]|\\.)*)"', value)
        else:
            table[key.strip()] = value.strip('"')
    return doc


def _version() -> str:
    text = (ROOT / PACKAGE / "__init__.py").read_text(encoding="utf-8")
    m = re.search(r'^__version__ = "([^"]+)"', text, re.M)
    if not m:
        raise RuntimeError(f"no __version__ in {PACKAGE}/__init__.py")
    return m.group(1)


def _name_version() -> tuple[str, str]:
    return _project()["name"], _version()


def metadata() -> str:
    """The core metadata (METADATA in a wheel, PKG-INFO in an sdist)."""
    p = _project()
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {p['name']}",
        f"Version: {_version()}",
        f"Summary: {p.get('description', '')}",
        f"Requires-Python: {p.get('requires-python', '>=3')}",
    ]
    lines += [f"Requires-Dist: {d}" for d in p.get("dependencies", [])]
    for extra, deps in p.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f'Requires-Dist: {d}; extra == "{extra}"' for d in deps]
    readme = p.get("readme")
    if readme:
        lines.append("Description-Content-Type: text/markdown")
        return "\n".join(lines) + "\n\n" + (ROOT / readme).read_text(encoding="utf-8")
    return "\n".join(lines) + "\n"


def _entry_points() -> str:
    scripts = _project().get("scripts", {})
    if not scripts:
        return ""
    return "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items())


def _dist_info_files(name: str, version: str) -> dict[str, bytes]:
    files = {
        "METADATA": metadata().encode(),
        "WHEEL": f"Wheel-Version: 1.0\nGenerator: drover-backend\nRoot-Is-Purelib: true\nTag: {TAG}\n".encode(),
        "top_level.txt": f"{PACKAGE}\n".encode(),
    }
    if entry_points := _entry_points():
        files["entry_points.txt"] = entry_points.encode()
    return files


def _package_files() -> list[Path]:
    """The package's files: its modules and py.typed, never caches."""
    out = []
    for path in sorted((ROOT / PACKAGE).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".typed"):
            out.append(path)
    return out


def _date_time() -> tuple[int, int, int, int, int, int]:
    # Reproducible archives: SOURCE_DATE_EPOCH when set, else zip's earliest date.
    epoch = int(os.environ.get("SOURCE_DATE_EPOCH", "315532800"))
    return time.gmtime(max(epoch, 315532800))[:6]


class _Wheel:
    """A wheel being written: every file is recorded in RECORD with its hash and size."""

    def __init__(self, path: Path, name: str, version: str) -> None:
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED)
        self.dist_info = f"{_normalize(name)}-{version}.dist-info"
        self.records: list[str] = []

    def add(self, arcname: str, data: bytes) -> None:
        info = zipfile.ZipInfo(arcname, date_time=_date_time())
        info.external_attr = 0o644 << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        self.zip.writestr(info, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        self.records.append(f"{arcname},sha256={digest},{len(data)}")

    def close(self, name: str, version: str) -> None:
        for fname, data in _dist_info_files(name, version).items():
            self.add(f"{self.dist_info}/{fname}", data)
        record = f"{self.dist_info}/RECORD"
        self.records.append(f"{record},,")
        info = zipfile.ZipInfo(record, date_time=_date_time())
        info.external_attr = 0o644 << 16
        self.zip.writestr(info, "\n".join(self.records) + "\n")
        self.zip.close()


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _wheel_name(name: str, version: str) -> str:
    return f"{_normalize(name)}-{version}-{TAG}.whl"


def build_wheel(wheel_directory: str, config_settings: dict | None = None, metadata_directory: str | None = None) -> str:
    """PEP 517: writes the wheel into wheel_directory and returns its file name."""
    name, version = _name_version()
    filename = _wheel_name(name, version)
    whl = _Wheel(Path(wheel_directory) / filename, name, version)
    for path in _package_files():
        whl.add(path.relative_to(ROOT).as_posix(), path.read_bytes())
    whl.close(name, version)
    return filename


def build_editable(wheel_directory: str, config_settings: dict | None = None, metadata_directory: str | None = None) -> str:
    """PEP 660: a wheel whose .pth file puts this source folder on sys.path, so edits to the
    package take effect without reinstalling."""
    name, version = _name_version()
    filename = _wheel_name(name, version)
    whl = _Wheel(Path(wheel_directory) / filename, name, version)
    whl.add(f"__editable__.{_normalize(name)}-{version}.pth", (str(ROOT) + "\n").encode())
    whl.close(name, version)
    return filename


def build_sdist(sdist_directory: str, config_settings: dict | None = None) -> str:
    """PEP 517: writes the source distribution (.tar.gz) and returns its file name."""
    name, version = _name_version()
    base = f"{_normalize(name)}-{version}"
    paths = list(_package_files())
    for extra in SDIST_EXTRA:
        p = ROOT / extra
        paths += sorted(q for q in p.rglob("*") if q.is_file() and "__pycache__" not in q.parts) if p.is_dir() else [p]
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH") or time.time())
    filename = base + ".tar.gz"
    with tarfile.open(Path(sdist_directory) / filename, "w:gz", format=tarfile.PAX_FORMAT) as tar:

        def add(arcname: str, data: bytes) -> None:
            info = tarfile.TarInfo(f"{base}/{arcname}")
            info.size, info.mtime, info.mode = len(data), mtime, 0o644
            tar.addfile(info, io.BytesIO(data))

        for path in paths:
            add(path.relative_to(ROOT).as_posix(), path.read_bytes())
        add("PKG-INFO", metadata().encode())
    return filename


def _prepare_metadata(metadata_directory: str) -> str:
    name, version = _name_version()
    dist_info = Path(metadata_directory) / f"{_normalize(name)}-{version}.dist-info"
    dist_info.mkdir(parents=True, exist_ok=True)
    for fname, data in _dist_info_files(name, version).items():
        (dist_info / fname).write_bytes(data)
    return dist_info.name


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: dict | None = None) -> str:
    """PEP 517: the .dist-info folder, without building the wheel."""
    return _prepare_metadata(metadata_directory)


def prepare_metadata_for_build_editable(metadata_directory: str, config_settings: dict | None = None) -> str:
    """PEP 660: the same .dist-info as the wheel's."""
    return _prepare_metadata(metadata_directory)


def get_requires_for_build_wheel(config_settings: dict | None = None) -> list[str]:
    """Nothing: building needs only the standard library."""
    return []


def get_requires_for_build_sdist(config_settings: dict | None = None) -> list[str]:
    return []


def get_requires_for_build_editable(config_settings: dict | None = None) -> list[str]:
    return []
