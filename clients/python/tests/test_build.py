"""The in-tree build backend (_build/backend.py): the wheel, the editable wheel and the sdist pip
gets from it. populate-worker's TestPythonPackage installs them with pip in fresh venvs."""

import base64
import hashlib
import importlib.util
import io
import sys
import tarfile
import tempfile
import unittest
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _load_backend(root: Path):
    spec = importlib.util.spec_from_file_location(f"backend_{abs(hash(root))}", root / "_build" / "backend.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


if not (ROOT / "_build" / "backend.py").is_file():
    # A copy of the tests run against an installed package (TestPythonClient) has no source tree.
    raise unittest.SkipTest("the build backend's tests run in the source tree (clients/python)")
backend = _load_backend(ROOT)


class BackendTest(unittest.TestCase):
    def setUp(self):
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        self.out = Path(tmp.name)

    def test_the_wheel_holds_the_package_typed_with_a_true_record(self):
        name = backend.build_wheel(str(self.out))
        version = backend._version()
        self.assertEqual(name, f"drover-{version}-py3-none-any.whl")
        with zipfile.ZipFile(self.out / name) as whl:
            names = set(whl.namelist())
            self.assertIn("drover/py.typed", names)
            self.assertIn("drover/client.py", names)
            self.assertFalse([n for n in names if "__pycache__" in n or n.startswith("tests/")], names)
            dist = f"drover-{version}.dist-info"
            meta = whl.read(f"{dist}/METADATA").decode()
            self.assertIn("Name: drover\n", meta)
            self.assertIn(f"Version: {version}\n", meta)
            self.assertIn("Requires-Python: >=3.10\n", meta)
            self.assertIn('Requires-Dist: tqdm; extra == "progress"\n', meta)
            self.assertIn("drover-py = drover.__main__:main", whl.read(f"{dist}/entry_points.txt").decode())
            self.assertIn("Root-Is-Purelib: true", whl.read(f"{dist}/WHEEL").decode())
            record = whl.read(f"{dist}/RECORD").decode().splitlines()
            self.assertEqual({r.split(",")[0] for r in record}, names)
            for row in record:
                path, digest, size = row.split(",")
                if path.endswith("RECORD"):
                    continue
                data = whl.read(path)
                want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                self.assertEqual((digest, int(size)), (want, len(data)), path)

    def test_the_editable_wheel_points_at_this_folder(self):
        name = backend.build_editable(str(self.out))
        with zipfile.ZipFile(self.out / name) as whl:
            pth = [n for n in whl.namelist() if n.endswith(".pth")]
            self.assertEqual(len(pth), 1)
            self.assertEqual(whl.read(pth[0]).decode().strip(), str(ROOT))
            self.assertFalse([n for n in whl.namelist() if n.startswith("drover/")])

    def test_a_wheel_builds_from_the_sdist(self):
        name = backend.build_sdist(str(self.out))
        with tarfile.open(self.out / name) as tar:
            tar.extractall(self.out / "src", filter="data") if sys.version_info >= (3, 12) else tar.extractall(self.out / "src")
        root = self.out / "src" / name.removesuffix(".tar.gz")
        for f in ("PKG-INFO", "pyproject.toml", "README.md", "_build/backend.py", "drover/py.typed", "tests/test_build.py"):
            self.assertTrue((root / f).is_file(), f)
        wheel = _load_backend(root).build_wheel(str(self.out))
        self.assertTrue((self.out / wheel).is_file())

    def test_the_small_toml_reader_reads_pyproject_as_tomllib_does(self):
        try:
            import tomllib
        except ModuleNotFoundError:
            self.skipTest("no tomllib before Python 3.11")
        text = (ROOT / "pyproject.toml").read_text()
        self.assertEqual(backend._parse_toml(text), tomllib.load(io.BytesIO(text.encode())))


if __name__ == "__main__":
    unittest.main()
