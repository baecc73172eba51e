"""ctest helper: every requested CUDA architecture has device code (an sm_XX ELF) in the library.

Reads the fat binaries embedded in the objects directly (cuobjdump is not part of every toolkit
install): header magic 0xBA55ED50, then entries of (kind: 1 = PTX, 2 = ELF, ..., sm version at +28).
Usage: check_fatbin.py LIBRARY ARCH [ARCH...]
"""
import re
import struct
import sys

MAGIC = struct.pack("<I", 0xBA55ED50)


def fatbin_entries(data):
    start = data.find(MAGIC)
    while start != -1:
        _, _, header_size, fat_size = struct.unpack_from("<IHHQ", data, start)
        pos, end = start + header_size, start + header_size + fat_size
        while pos < end:
            kind, _, entry_header, padded = struct.unpack_from("<HHIQ", data, pos)
            (sm,) = struct.unpack_from("<I", data, pos + 28)
            yield kind, sm
            pos += entry_header + padded
        start = data.find(MAGIC, end)


def main(argv):
    library, wanted = argv[1], argv[2:]
    with open(library, "rb") as handle:
        entries = list(fatbin_entries(handle.read()))
    elf = sorted({sm for kind, sm in entries if kind == 2})
    ptx = sorted({sm for kind, sm in entries if kind == 1})
    print("device code (ELF) for sm_%s; PTX for compute_%s" % (elf, ptx))
    missing = [a for a in wanted if int(re.sub(r"-(real|virtual)$", "", a)) not in elf]
    if missing:
        print("missing device code for: %s (requested %s)" % (missing, wanted))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
