"""The profile probe's stored profiles: the shared stack records (cutaway.probes.stacks), which
the instructions probe stores too, named here for the profile probe's modules."""

from cutaway.probes.stacks import FORMAT_VERSION as FORMAT_VERSION
from cutaway.probes.stacks import INSTRUCTIONS as INSTRUCTIONS
from cutaway.probes.stacks import KIND as KIND
from cutaway.probes.stacks import NANOSECONDS as NANOSECONDS
from cutaway.probes.stacks import OFF_CPU as OFF_CPU
from cutaway.probes.stacks import ON_CPU as ON_CPU
from cutaway.probes.stacks import UNITS as UNITS
from cutaway.probes.stacks import Profile as Profile
from cutaway.probes.stacks import ProfileFormatError as ProfileFormatError
from cutaway.probes.stacks import decode as decode
from cutaway.probes.stacks import encode as encode
