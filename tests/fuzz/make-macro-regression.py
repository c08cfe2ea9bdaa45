#!/usr/bin/env python3
"""The fuzz_dwarf regression macro-opcode-table-opcode-zero, built by hand.

    tests/fuzz/make-macro-regression.py OUT

A minimal ELF file whose only DWARF is one compile unit named vm.c (the
unit layout.def takes macro constants from) with DW_AT_macros pointing at
a .debug_macro unit whose header carries an opcode_operands_table (flag
0x4) with an entry for opcode 0. elfutils 0.188 trusts that table and
stores opcode 0's entry before its stack array, which corrupts its stack;
dwarf/macros.c (macro_unit_safe) refuses such units before libdw sees
them. fuzz_dwarf must pass on this file, and crash without that check.
(The first input libFuzzer found was a 322 KB mutated seed.)
"""
import struct
import sys


def uleb(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


DW_TAG_compile_unit, DW_AT_name, DW_AT_macros = 0x11, 0x03, 0x79
DW_FORM_string, DW_FORM_sec_offset, DW_FORM_udata = 0x08, 0x17, 0x0F
DW_MACRO_define = 0x01

abbrev = (uleb(1) + uleb(DW_TAG_compile_unit) + b"\x00"
          + uleb(DW_AT_name) + uleb(DW_FORM_string)
          + uleb(DW_AT_macros) + uleb(DW_FORM_sec_offset)
          + b"\x00\x00" + b"\x00")

die = uleb(1) + b"vm.c\x00" + struct.pack("<I", 0)
cu_body = struct.pack("<HIB", 4, 0, 8) + die  # DWARF 4, abbrev 0, 8-byte addresses
info = struct.pack("<I", len(cu_body)) + cu_body

# version 5, flags: opcode_operands_table only (32-bit offsets, no line
# table); the table: one entry, for opcode 0, with one udata operand.
# Then one ordinary definition and the end of the unit.
macro = (struct.pack("<HB", 5, 0x04)
         + bytes([1, 0]) + uleb(1) + bytes([DW_FORM_udata])
         + bytes([DW_MACRO_define]) + uleb(1) + b"IMEMO_MASK 7\x00"
         + b"\x00")

sections = [(".debug_abbrev", abbrev), (".debug_info", info),
            (".debug_macro", macro)]
shstrtab = b"\x00" + b"".join(n.encode() + b"\x00" for n, _ in sections) \
    + b".shstrtab\x00"


def name_off(name):
    return shstrtab.index(name.encode() + b"\x00")


body = bytearray()
offsets = []
for _, data in sections + [(".shstrtab", shstrtab)]:
    offsets.append(64 + len(body))
    body += data
while len(body) % 8:
    body += b"\x00"
shoff = 64 + len(body)

SHT_PROGBITS, SHT_STRTAB = 1, 3
shdrs = bytes(64)  # the null section
for i, (name, data) in enumerate(sections + [(".shstrtab", shstrtab)]):
    kind = SHT_STRTAB if name == ".shstrtab" else SHT_PROGBITS
    shdrs += struct.pack("<IIQQQQIIQQ", name_off(name), kind, 0, 0,
                         offsets[i], len(data), 0, 0, 1, 0)

ET_DYN, EM_X86_64 = 3, 62
ehdr = (b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)
        + struct.pack("<HHIQQQIHHHHHH", ET_DYN, EM_X86_64, 1, 0, 0, shoff,
                      0, 64, 0, 0, 64, len(sections) + 2, len(sections) + 1))
with open(sys.argv[1], "wb") as f:
    f.write(ehdr + body + shdrs)
