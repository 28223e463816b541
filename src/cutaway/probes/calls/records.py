"""The call catalog, for the experiment file's check of the calls probe's options: the
interposer's files and catalog are in cutaway.probes.interposer, shared with the spans and
syscalls probes."""

from cutaway.probes.interposer import CATALOG

__all__ = ["CATALOG"]
