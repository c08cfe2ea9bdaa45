"""Program headers of an ELF64 little-endian file (x86-64 cores), for tests
that read or patch a core themselves."""

import struct

PT_LOAD, PT_NOTE = 1, 4


def program_headers(path):
    """-> [(p_type, p_offset, p_vaddr, p_filesz)]; ValueError if not ELF64."""
    with open(path, "rb") as f:
        eh = f.read(64)
        if eh[:4] != b"\x7fELF" or eh[4] != 2:
            raise ValueError("%s is not an ELF64 file" % path)
        phoff, = struct.unpack_from("<Q", eh, 32)
        phentsize, phnum = struct.unpack_from("<HH", eh, 54)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    out = []
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", table, i * phentsize)
        out.append((p_type, p_offset, p_vaddr, p_filesz))
    return out
