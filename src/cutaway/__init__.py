"""cutaway: a performance-analysis workbench for server software.

The library is usable without the CLI: see :mod:`cutaway.api` for loading stored experiments as
arrays in a notebook or a script.
"""

__version__ = "0.1.0"
