"""Build the native parts with the package, so that `pip install .` and `pip install -e .` need
no manual step.

All metadata lives in pyproject.toml. Three C extension modules: cutaway._cwspans
(native/cw_spans_python.c), cutaway.spans's C path, which hands Python spans to the C span
writer; cutaway._cwotlp (native/cw_otlp_python.c), the OTLP reader's nester and counter; and
cutaway._cwsdk (native/cw_sdk_python.c), the span SDK reader's, both counting with
native/cw_phases.h (each builds as any extension; cutaway.spans and the readers fall back to
Python without it). And
`build_ext` is extended to compile, next to the package's __init__.py (build/lib*/cutaway/ for
a wheel, src/cutaway/ for an in-place or editable build):
- native/cw_forkserver.c into the executable cw_forkserver, where
  cutaway.runner.forkserver.executable_path() looks for it;
- native/cw_calls.c into the LD_PRELOAD library libcwcalls.so, where
  cutaway.probes.calls_format.library_path() looks for it;
- native/cw_calls.c again, with CW_SPANS_LIBRARY, into libcwspans.so, the span writer that
  native/include/cutaway/span.h loads under the spans probe
  (cutaway.probes.spans.records.library_path());
- native/cw_calls_calibrate.c into cw_calls_calibrate, which the calls probe runs to measure
  its own overhead per timed call;
- native/cw_fold.c into cw_fold, the stack folder of `perf script` output, where
  cutaway.probes.profile.native_fold.folder_path() looks for it;
- native/cw_load.c (with native/cw_hdr.h) into cw_load, the load generator, where
  cutaway.probes.load.generator.generator_path() looks for it (links zlib for the HdrHistogram
  encoding);
- native/cw_uprobe_calibrate.c into cw_uprobe_calibrate, which the uprobes probe runs to measure
  its cost per hit and to mark the end of a run in its tracer's output."""

from __future__ import annotations

import os
from typing import Any

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext
from setuptools.dist import Distribution

PACKAGE = "cutaway"
EXECUTABLE = "cw_forkserver"  # must match EXECUTABLE_NAME in src/cutaway/runner/forkserver.py
SOURCES = ["native/cw_forkserver.c"]
HEADERS = ["native/cw_protocol.h"]
FLAGS = ["-Wall", "-Wextra", "-Werror", "-O2", "-std=gnu11"]
LIBRARY = "libcwcalls.so"  # must match LIBRARY_NAME in src/cutaway/probes/calls_format.py
LIBRARY_SOURCES = ["native/cw_calls.c"]
LIBRARY_HEADERS = ["native/cw_calls_format.h"]
# Hidden by default: the library exports only the libc names it interposes (marked in the
# source), so that nothing else in it can capture a program's symbols.
LIBRARY_FLAGS = [*FLAGS, "-fPIC", "-fvisibility=hidden"]
SPANS_LIBRARY = "libcwspans.so"  # must match LIBRARY_NAME in src/cutaway/probes/spans/records.py
SPANS_HEADERS = ["native/cw_calls_format.h", "native/include/cutaway/span.h"]
CALIBRATOR = "cw_calls_calibrate"  # must match CALIBRATOR_NAME in src/cutaway/probes/calls_format.py
CALIBRATOR_SOURCES = ["native/cw_calls_calibrate.c"]
FOLDER = "cw_fold"  # must match FOLDER_NAME in src/cutaway/probes/profile/native_fold.py
FOLDER_SOURCES = ["native/cw_fold.c"]
LOADER = "cw_load"  # must match GENERATOR_NAME in src/cutaway/probes/load/generator.py
LOADER_SOURCES = ["native/cw_load.c"]
LOADER_HEADERS = ["native/cw_hdr.h"]
UPROBE_CALIBRATOR = "cw_uprobe_calibrate"  # must match src/cutaway/probes/uprobes/tracer.py
UPROBE_CALIBRATOR_SOURCES = ["native/cw_uprobe_calibrate.c"]
PHASES_HEADERS = ["native/cw_phases.h"]  # the counting both span readers' extensions compile
NATIVE_OUTPUTS = (
    EXECUTABLE, LIBRARY, SPANS_LIBRARY, CALIBRATOR, FOLDER, LOADER, UPROBE_CALIBRATOR,
)  # fmt: skip


class BinaryDistribution(Distribution):
    """Declares native code, so that build_ext runs and the wheel is platform-specific."""

    def has_ext_modules(self) -> bool:
        return True


class BuildExtWithForkServer(build_ext):
    """build_ext, then compile and link the fork server executable and the call interposer."""

    def run(self) -> None:
        super().run()
        compiler = self._native_compiler()
        self._compile_executable(compiler, self._built_path(EXECUTABLE))
        self._compile_library(compiler, self._built_path(LIBRARY))
        self._compile_library(compiler, self._built_path(SPANS_LIBRARY), spans=True)
        self._compile_calibrator(compiler, self._built_path(CALIBRATOR))
        self._compile_folder(compiler, self._built_path(FOLDER))
        self._compile_loader(compiler, self._built_path(LOADER))
        self._compile_uprobe_calibrator(compiler, self._built_path(UPROBE_CALIBRATOR))
        if self.inplace:
            # As setuptools does for extensions: build in build_lib, then copy into the source
            # package (editable installs and `setup.py build_ext --inplace` import from there).
            for name in NATIVE_OUTPUTS:
                self.copy_file(self._built_path(name), self._inplace_path(name), level=self.verbose)

    def _native_compiler(self) -> Any:  # a distutils CCompiler (distutils has no types)
        # Imported here, after setuptools, which provides distutils on Python >= 3.12.
        from distutils.ccompiler import new_compiler
        from distutils.sysconfig import customize_compiler

        compiler = self.compiler  # an option (a name or None) until extensions are built
        if compiler is None or isinstance(compiler, str):
            compiler = new_compiler(compiler=compiler, force=self.force)
            customize_compiler(compiler)
        return compiler

    def _compile_executable(self, compiler: Any, output: str) -> None:
        from distutils.errors import LinkError

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

    def _compile_calibrator(self, compiler: Any, output: str) -> None:
        # Dynamic: it must call close() through libc, where the interposer can time it.
        objects = compiler.compile(
            CALIBRATOR_SOURCES, output_dir=self.build_temp, extra_preargs=FLAGS
        )
        os.makedirs(os.path.dirname(output), exist_ok=True)
        compiler.link_executable(objects, CALIBRATOR, os.path.dirname(output))

    def _compile_folder(self, compiler: Any, output: str) -> None:
        objects = compiler.compile(FOLDER_SOURCES, output_dir=self.build_temp, extra_preargs=FLAGS)
        os.makedirs(os.path.dirname(output), exist_ok=True)
        compiler.link_executable(objects, FOLDER, os.path.dirname(output))

    def _compile_loader(self, compiler: Any, output: str) -> None:
        objects = compiler.compile(
            LOADER_SOURCES,
            output_dir=self.build_temp,
            include_dirs=["native"],
            extra_preargs=FLAGS,
            depends=LOADER_HEADERS,
        )
        os.makedirs(os.path.dirname(output), exist_ok=True)
        compiler.link_executable(
            objects, LOADER, os.path.dirname(output), libraries=["z", "m", "pthread"]
        )

    def _compile_uprobe_calibrator(self, compiler: Any, output: str) -> None:
        # Never stripped: its two functions are found by their symbols.
        objects = compiler.compile(
            UPROBE_CALIBRATOR_SOURCES, output_dir=self.build_temp, extra_preargs=FLAGS
        )
        os.makedirs(os.path.dirname(output), exist_ok=True)
        compiler.link_executable(objects, UPROBE_CALIBRATOR, os.path.dirname(output))

    def _compile_library(self, compiler: Any, output: str, *, spans: bool = False) -> None:
        # The span writer is the same source with the interposed functions left out: its own
        # object directory, since both objects would otherwise be build_temp/native/cw_calls.o.
        objects = compiler.compile(
            LIBRARY_SOURCES,
            output_dir=os.path.join(self.build_temp, "spans") if spans else self.build_temp,
            include_dirs=["native"],
            macros=[("CW_SPANS_LIBRARY", "1")] if spans else None,
            extra_preargs=LIBRARY_FLAGS,
            depends=SPANS_HEADERS if spans else LIBRARY_HEADERS,
        )
        os.makedirs(os.path.dirname(output), exist_ok=True)
        # Dynamic, never static: the library is loaded into programs that have their own libc.
        # dlsym lives in libdl and pthread_atfork in libpthread before glibc 2.34.
        compiler.link_shared_object(
            objects,
            os.path.basename(output),
            os.path.dirname(output),
            libraries=["dl", "pthread"],
            extra_preargs=["-shared"],
        )

    def _inplace_path(self, name: str) -> str:
        build_py = self.get_finalized_command("build_py")
        return os.path.join(build_py.get_package_dir(PACKAGE), name)

    def get_outputs(self) -> list[str]:
        """Like setuptools' own: files in build_lib (also when building in place)."""
        outputs = super().get_outputs()
        built = [self._built_path(name) for name in NATIVE_OUTPUTS]
        return [*outputs, *(path for path in built if path not in outputs)]

    def get_output_mapping(self) -> dict[str, str]:
        """build_lib file -> in-place file, as setuptools maps extensions for editable
        installs."""
        native = {self._built_path(name): self._inplace_path(name) for name in NATIVE_OUTPUTS}
        return {**super().get_output_mapping(), **native}

    def get_source_files(self) -> list[str]:
        """Lets sdist ship the C sources without a MANIFEST.in."""
        native = [
            *SOURCES,
            *HEADERS,
            *LIBRARY_SOURCES,
            *LIBRARY_HEADERS,
            *SPANS_HEADERS,
            *FOLDER_SOURCES,
            *LOADER_SOURCES,
            *LOADER_HEADERS,
            *UPROBE_CALIBRATOR_SOURCES,
            *PHASES_HEADERS,
        ]
        return [*super().get_source_files(), *native]

    def _built_path(self, name: str) -> str:
        return os.path.join(self.build_lib, PACKAGE, name)


SPANS_EXTENSION = Extension(
    "cutaway._cwspans",
    sources=["native/cw_spans_python.c"],
    include_dirs=["native/include"],
    depends=["native/include/cutaway/span.h"],
    extra_compile_args=FLAGS,
)

OTLP_EXTENSION = Extension(
    "cutaway._cwotlp",
    sources=["native/cw_otlp_python.c"],
    depends=PHASES_HEADERS,
    extra_compile_args=FLAGS,
)

SDK_EXTENSION = Extension(
    "cutaway._cwsdk",
    sources=["native/cw_sdk_python.c"],
    depends=PHASES_HEADERS,
    extra_compile_args=FLAGS,
)

setup(
    distclass=BinaryDistribution,
    cmdclass={"build_ext": BuildExtWithForkServer},
    ext_modules=[SPANS_EXTENSION, OTLP_EXTENSION, SDK_EXTENSION],
)
