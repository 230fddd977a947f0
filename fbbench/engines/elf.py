"""What an ELF file's header says: whether a file is a program or shared library, and for which
CPU. Enough to refuse a Firebird build of another architecture with one line naming it, before
the dynamic loader fails with "wrong ELF class" or "cannot open shared object file"."""

from __future__ import annotations

import platform
from dataclasses import dataclass
from pathlib import Path

MAGIC = b"\x7fELF"
# e_machine values (the System V ABI's registry) of the CPUs Firebird is built for.
MACHINES = {
    2: "SPARC", 3: "i386 (32-bit x86)", 8: "MIPS", 20: "PowerPC", 21: "PowerPC 64", 22: "s390",
    40: "arm (32-bit)", 43: "SPARC 64", 62: "x86-64", 183: "arm64 (aarch64)", 243: "RISC-V", 258: "LoongArch",
}
# platform.machine() → the e_machine of the programs this machine runs natively.
_HOST_MACHINES = {"x86_64": 62, "amd64": 62, "aarch64": 183, "arm64": 183, "i386": 3, "i686": 3,
                  "ppc64le": 21, "ppc64": 21, "s390x": 22, "riscv64": 243, "loongarch64": 258}


@dataclass(frozen=True)
class ElfHeader:
    bits: int  # 32 or 64 (EI_CLASS)
    machine: int  # e_machine

    @property
    def name(self) -> str:
        known = MACHINES.get(self.machine, f"machine {self.machine}")
        # A 32-bit file for a 64-bit CPU (x86-64's x32): the class tells it apart.
        return known if self.bits == 64 or "32-bit" in known else f"{known}, 32-bit"


def read_header(path: Path) -> ElfHeader | None:
    """The header of ``path``; None when it is not an ELF file (or cannot be read)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(20)
    except OSError:
        return None
    if len(head) < 20 or not head.startswith(MAGIC) or head[4] not in (1, 2) or head[5] not in (1, 2):
        return None
    machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    return ElfHeader(32 if head[4] == 1 else 64, machine)


def is_elf(path: Path) -> bool:
    return read_header(path) is not None


def host_header() -> ElfHeader | None:
    """What this machine's own programs are (None on a CPU this table does not know)."""
    machine = _HOST_MACHINES.get(platform.machine().lower())
    if machine is None:
        return None
    return ElfHeader(32 if machine == 3 else 64, machine)
