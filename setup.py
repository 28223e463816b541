"""Build the native fork server with the package, so that `pip install .` and `pip install -e .`
need no manual step.

All metadata lives in pyproject.toml. There is no C extension module: `build_ext` is extended
to compile native/cw_forkserver.c into an executable next to the package's __init__.py
(build/lib*/cutaway/ for a wheel, src/cutaway/ for an in-place or editable build), where
cutaway.runner.forkserver.executable_path() looks for it."""

from __future__ import annotations

import os

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.dist import Distribution

PACKAGE = "cutaway"
EXECUTABLE = "cw_forkserver"  # must match EXECUTABLE_NAME in src/cutaway/runner/forkserver.py
SOURCES = ["native/cw_forkserver.c"]
HEADERS = ["native/cw_protocol.h"]
FLAGS = ["-Wall", "-Wextra", "-Werror", "-O2", "-std=gnu11"]


class BinaryDistribution(Distribution):
    """Declares native code, so that build_ext runs and the wheel is platform-specific."""

    def has_ext_modules(self) -> bool:
        return True


class BuildExtWithForkServer(build_ext):
    """build_ext, then compile and link the fork server executable."""

    def run(self) -> None:
        super().run()
        built = self._built_path()
        self._compile_executable(built)
        if self.inplace:
            # As setuptools does for extensions: build in build_lib, then copy into the source
            # package (editable installs and `setup.py build_ext --inplace` import from there).
            self.copy_file(built, self._inplace_path(), level=self.verbose)

    def _compile_executable(self, output: str) -> None:
        # Imported here, after setuptools, which provides distutils on Python >= 3.12.
        from distutils.ccompiler import new_compiler
        from distutils.errors import LinkError
        from distutils.sysconfig import customize_compiler

        compiler = self.compiler  # an option (a name or None) until extensions are built
        if compiler is None or isinstance(compiler, str):
            compiler = new_compiler(compiler=compiler, force=self.force)
            customize_compiler(compiler)
        # Python's own CFLAGS come with the compiler (-fPIC and friends); keep our warnings
        # strict on top of them.
        objects = compiler.compile(
            SOURCES,
            output_dir=self.build_temp,
            include_dirs=["native"],
            extra_preargs=FLAGS,
            depends=HEADERS,
        )
        os.makedirs(os.path.dirname(output), exist_ok=True)
        directory = os.path.dirname(output)
        try:
            # Static: the server's peak RSS is the max_rss floor of every run it spawns, and a
            # static server peaks at ~0.7 MB instead of ~1.4 MB, below /bin/true's own ~1 MB.
            compiler.link_executable(objects, EXECUTABLE, directory, extra_postargs=["-static"])
        except LinkError:
            print("cutaway: no static libc (glibc-static); linking the fork server dynamically")
            compiler.link_executable(objects, EXECUTABLE, directory)

    def _inplace_path(self) -> str:
        build_py = self.get_finalized_command("build_py")
        return os.path.join(build_py.get_package_dir(PACKAGE), EXECUTABLE)

    def get_outputs(self) -> list[str]:
        """Like setuptools' own: files in build_lib (also when building in place)."""
        outputs = super().get_outputs()
        return outputs if self._built_path() in outputs else [*outputs, self._built_path()]

    def get_output_mapping(self) -> dict[str, str]:
        """build_lib file -> in-place file, as setuptools maps extensions for editable
        installs."""
        return {**super().get_output_mapping(), self._built_path(): self._inplace_path()}

    def get_source_files(self) -> list[str]:
        """Lets sdist ship the C sources without a MANIFEST.in."""
        return [*super().get_source_files(), *SOURCES, *HEADERS]

    def _built_path(self) -> str:
        return os.path.join(self.build_lib, PACKAGE, EXECUTABLE)


setup(distclass=BinaryDistribution, cmdclass={"build_ext": BuildExtWithForkServer})
