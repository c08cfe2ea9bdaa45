"""Program headers of an ELF64 little-endian file (x86-64 cores), for tests
that read or patch a core themselves."""

import struct

PT_LOAD, PT_NOTE = 1, 4
NT_FILE = 0x46494C45


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


def notes(path):
    """Every note of the core: (file offset of the note, type, descriptor)."""
    with open(path, "rb") as f:
        for p_type, p_offset, _, p_filesz in program_headers(path):
            if p_type != PT_NOTE:
                continue
            f.seek(p_offset)
            data = f.read(p_filesz)
            pos = 0
            while pos + 12 <= len(data):
                namesz, descsz, ntype = struct.unpack_from("<III", data, pos)
                desc = pos + 12 + ((namesz + 3) & ~3)
                yield p_offset + pos, ntype, p_offset + desc, data[desc:desc + descsz]
                pos = desc + ((descsz + 3) & ~3)


def nt_file_names(path):
    """[(file offset, name bytes)] of every name in the core's NT_FILE note."""
    out = []
    for _, ntype, desc_offset, desc in notes(path):
        if ntype == NT_FILE:
            count, = struct.unpack_from("<Q", desc, 0)
            at = 16 + 24 * count
            for _ in range(count):
                end = desc.index(b"\0", at)
                out.append((desc_offset + at, desc[at:end]))
                at = end + 1
    return out


def retype_notes(path, ntype, new_type):
    """Give every note of type ntype in the core at path the type new_type,
    in place (a reader then no longer sees it). -> how many were changed."""
    found = [offset for offset, t, _, _ in notes(path) if t == ntype]
    with open(path, "r+b") as f:
        for offset in found:
            f.seek(offset + 8)
            f.write(struct.pack("<I", new_type))
    return len(found)


class Patches:
    """Byte patches of a file in place, undone newest first by restore()."""

    def __init__(self, path):
        self.path = path
        self.saved = []   # (file offset, original bytes), newest last

    def read_at(self, off, size):
        with open(self.path, "rb") as f:
            f.seek(off)
            return f.read(size)

    def write_at(self, off, data):
        with open(self.path, "r+b") as f:
            f.seek(off)
            self.saved.append((off, f.read(len(data))))
            f.seek(off)
            f.write(data)

    def restore(self):
        with open(self.path, "r+b") as f:
            while self.saved:
                off, data = self.saved.pop()
                f.seek(off)
                f.write(data)
