#!/usr/bin/env python3
"""Checks a macOS universal binary as a Mac would load it, on a machine that is not a Mac.

What it checks, from the Mach-O format itself (Apple's <mach-o/fat.h>, <mach-o/loader.h> and the code
signature blobs of <kern/cs_blobs.h>):
  - the fat header holds exactly the architectures asked for, each an executable of its own CPU type;
  - each slice's LC_BUILD_VERSION says macOS, with the minimum version asked for (an older Mac refuses a
    binary whose minimum is newer than itself);
  - each slice links only libraries every Mac has (/usr/lib, /System/Library);
  - the slices asked for carry a code signature (LC_CODE_SIGNATURE) whose code directory is ad hoc, and whose
    page hashes match the slice's bytes: the kernel kills an arm64 process that is unsigned or whose pages
    don't match their hashes.

Usage: macho.py FILE --arches x86_64,arm64 --min-os 11.0 --signed arm64
       macho.py --self-test FILE ...   (the same checks, then each on a copy broken the way it guards against)
Prints one line per slice; exits 1 with the reasons when a check fails.
"""

import argparse
import hashlib
import struct
import sys

FAT_MAGIC = 0xCAFEBABE
MH_MAGIC_64 = 0xFEEDFACF
MH_EXECUTE = 2
CPU_TYPES = {0x01000007: "x86_64", 0x0100000C: "arm64"}
LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_REEXPORT_DYLIB = 0xC, 0x80000018, 0x8000001F
LC_CODE_SIGNATURE = 0x1D
LC_BUILD_VERSION = 0x32
PLATFORM_MACOS = 1
CSMAGIC_EMBEDDED_SIGNATURE = 0xFADE0CC0
CSMAGIC_CODEDIRECTORY = 0xFADE0C02
CSSLOT_CODEDIRECTORY = 0
CS_ADHOC = 0x2
HASHES = {1: ("sha1", 20), 2: ("sha256", 32)}
# Limits on what a file may claim, so that a broken one is refused rather than looped over.
MAX_SLICES = 8
MAX_LOAD_COMMANDS = 4096
MAX_BLOBS = 64
SYSTEM_LIBRARY_DIRS = ("/usr/lib/", "/System/Library/")


class Refused(Exception):
    """A check the binary fails, with what was expected and what was found."""


def unpack(fmt, data, offset):
    """struct.unpack_from, refusing a read past the end of `data` as a truncated file."""
    if offset < 0 or offset + struct.calcsize(fmt) > len(data):
        raise Refused(f"truncated: a {struct.calcsize(fmt)}-byte field at {offset} is past the end ({len(data)} bytes)")
    return struct.unpack_from(fmt, data, offset)


def version_text(packed):
    """A Mach-O version (xxxx.yy.zz in nibbles) as text: 0x000B0000 is 11.0."""
    major, minor, patch = packed >> 16, (packed >> 8) & 0xFF, packed & 0xFF
    return f"{major}.{minor}" + (f".{patch}" if patch else "")


def slices(data):
    """The fat header's slices: (architecture name, offset in the file, bytes)."""
    magic, count = unpack(">II", data, 0)
    if magic != FAT_MAGIC:
        raise Refused(f"not a universal binary: magic {magic:#x}, expected {FAT_MAGIC:#x}")
    if count > MAX_SLICES:
        raise Refused(f"{count} slices, more than {MAX_SLICES}")
    found = []
    for index in range(count):
        cpu, _subtype, offset, size, _align = unpack(">IIIII", data, 8 + 20 * index)
        if offset + size > len(data):
            raise Refused(f"slice {index} ends at {offset + size}, past the file's {len(data)} bytes")
        found.append((CPU_TYPES.get(cpu, f"cpu {cpu:#x}"), offset, data[offset : offset + size]))
    return found


def load_commands(image):
    """A thin Mach-O's load commands: (command, its bytes)."""
    magic, _cpu, _subtype, filetype, count, size, _flags, _reserved = unpack("<IIIIIIII", image, 0)
    if magic != MH_MAGIC_64:
        raise Refused(f"not a 64-bit Mach-O: magic {magic:#x}")
    if filetype != MH_EXECUTE:
        raise Refused(f"file type {filetype}, not an executable ({MH_EXECUTE})")
    if count > MAX_LOAD_COMMANDS or 32 + size > len(image):
        raise Refused(f"{count} load commands in {size} bytes do not fit the header")
    commands, offset = [], 32
    for _ in range(count):
        command, length = unpack("<II", image, offset)
        if length < 8 or offset + length > 32 + size:
            raise Refused(f"load command {command:#x} at {offset} has a bad length {length}")
        commands.append((command, image[offset : offset + length]))
        offset += length
    return commands


def minimum_macos(commands):
    """The minimum macOS LC_BUILD_VERSION gives, as text."""
    versions = [unpack("<IIII", body, 8) for command, body in commands if command == LC_BUILD_VERSION]
    if len(versions) != 1:
        raise Refused(f"{len(versions)} LC_BUILD_VERSION commands, expected 1")
    platform, minos, _sdk, _tools = versions[0]
    if platform != PLATFORM_MACOS:
        raise Refused(f"built for platform {platform}, not macOS ({PLATFORM_MACOS})")
    return version_text(minos)


def libraries(commands):
    """The libraries the slice loads."""
    found = []
    for command, body in commands:
        if command in (LC_LOAD_DYLIB, LC_LOAD_WEAK_DYLIB, LC_REEXPORT_DYLIB):
            (name_offset,) = unpack("<I", body, 8)
            found.append(body[name_offset:].split(b"\0", 1)[0].decode("utf-8", "replace"))
    return found


def signature(image, commands):
    """The slice's code directory, checked: its identifier and flags, after every page hash is compared."""
    places = [unpack("<II", body, 8) for command, body in commands if command == LC_CODE_SIGNATURE]
    if not places:
        raise Refused("no LC_CODE_SIGNATURE: unsigned, which an arm64 Mac kills at launch")
    data_offset, data_size = places[0]
    blob = image[data_offset : data_offset + data_size]
    magic, _length, count = unpack(">III", blob, 0)
    if magic != CSMAGIC_EMBEDDED_SIGNATURE or count > MAX_BLOBS:
        raise Refused(f"the signature's superblob has magic {magic:#x} and {count} blobs")
    directories = [unpack(">II", blob, 12 + 8 * i)[1] for i in range(count) if unpack(">II", blob, 12 + 8 * i)[0] == CSSLOT_CODEDIRECTORY]
    if not directories:
        raise Refused("the signature has no code directory")
    at = directories[0]
    (magic, _length, _version, flags, hash_offset, ident_offset, _special, code_slots, code_limit,
     hash_size, hash_type, _platform, page_shift) = unpack(">IIIIIIIIIBBBB", blob, at)
    if magic != CSMAGIC_CODEDIRECTORY:
        raise Refused(f"the code directory has magic {magic:#x}")
    if hash_type not in HASHES or HASHES[hash_type][1] != hash_size:
        raise Refused(f"hash type {hash_type} of {hash_size} bytes")
    if code_limit != data_offset:
        raise Refused(f"the signature covers {code_limit} bytes, but the code runs to the signature at {data_offset}")
    page = 1 << page_shift
    if code_slots != (code_limit + page - 1) // page:
        raise Refused(f"{code_slots} page hashes for {code_limit} bytes in pages of {page}")
    for slot in range(code_slots):
        expected = blob[at + hash_offset + slot * hash_size : at + hash_offset + (slot + 1) * hash_size]
        actual = hashlib.new(HASHES[hash_type][0], image[slot * page : min((slot + 1) * page, code_limit)]).digest()
        if actual != expected:
            raise Refused(f"page {slot} (bytes {slot * page}..) does not match its hash in the signature")
    if not flags & CS_ADHOC:
        raise Refused(f"the code directory's flags {flags:#x} lack CS_ADHOC ({CS_ADHOC:#x})")
    identifier = blob[at + ident_offset :].split(b"\0", 1)[0].decode("utf-8", "replace")
    return identifier, flags, code_slots


def check(data, arches, min_os, signed):
    """Every check on one file's bytes; the lines to print. Raises Refused at the first that fails."""
    found = slices(data)
    names = [name for name, _, _ in found]
    if sorted(names) != sorted(arches):
        raise Refused(f"architectures {names}, expected {arches}")
    lines = []
    for name, _, image in found:
        commands = load_commands(image)
        cpu = CPU_TYPES.get(unpack("<I", image, 4)[0])
        if cpu != name:
            raise Refused(f"the {name} slice's own header says {cpu}")
        minimum = minimum_macos(commands)
        if minimum != min_os:
            raise Refused(f"the {name} slice needs macOS {minimum}, expected {min_os}")
        foreign = [lib for lib in libraries(commands) if not lib.startswith(SYSTEM_LIBRARY_DIRS)]
        if foreign:
            raise Refused(f"the {name} slice loads libraries a Mac doesn't have: {foreign}")
        line = f"{name}: executable, minimum macOS {minimum}, {len(libraries(commands))} system libraries"
        if name in signed:
            identifier, flags, pages = signature(image, commands)
            line += f", signed ad hoc ({identifier}, flags {flags:#x}, {pages} page hashes match)"
        lines.append(line)
    return lines


def broken_copies(data):
    """Copies of a good binary, each broken in one way a check must catch: (what, bytes)."""
    arm, image = next((offset, image) for name, offset, image in slices(data) if name == "arm64")
    offset, at = 32, {}
    for command, body in load_commands(image):
        at.setdefault(command, offset)
        offset += len(body)
    one_slice = bytearray(data)
    struct.pack_into(">I", one_slice, 4, 1)
    newer = bytearray(data)
    struct.pack_into("<I", newer, arm + at[LC_BUILD_VERSION] + 12, 15 << 16)
    unsigned = bytearray(data)
    struct.pack_into("<I", unsigned, arm + at[LC_CODE_SIGNATURE], 0x7FFFFFF0)
    changed_code = bytearray(data)
    changed_code[arm + 4096 * 3] ^= 0xFF
    data_offset = unpack("<I", image, at[LC_CODE_SIGNATURE] + 8)[0]
    directory = data_offset + unpack(">II", image, data_offset + 12)[1]
    not_adhoc = bytearray(data)
    struct.pack_into(">I", not_adhoc, arm + directory + 12, unpack(">I", image, directory + 12)[0] & ~CS_ADHOC)
    return [
        ("one architecture only", one_slice),
        ("arm64 needing macOS 15", newer),
        ("arm64 without LC_CODE_SIGNATURE", unsigned),
        ("a changed byte in arm64's code", changed_code),
        ("a signature that is not ad hoc", not_adhoc),
    ]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("file")
    parser.add_argument("--arches", required=True, help="comma-separated, e.g. x86_64,arm64")
    parser.add_argument("--min-os", required=True, help="the minimum macOS each slice must give, e.g. 11.0")
    parser.add_argument("--signed", default="", help="comma-separated architectures that must be signed ad hoc")
    parser.add_argument("--self-test", action="store_true", help="also check that each check refuses a broken copy")
    args = parser.parse_args()
    arches, signed = args.arches.split(","), [a for a in args.signed.split(",") if a]
    with open(args.file, "rb") as file:
        data = file.read()
    passed, failed = 0, 0
    try:
        for line in check(data, arches, args.min_os, signed):
            print(f"ok: {line}")
        passed += 1
    except Refused as refusal:
        print(f"macho.py: {args.file}: {refusal}", file=sys.stderr)
        failed += 1
    if args.self_test and not failed:
        for what, copy in broken_copies(data):
            try:
                check(bytes(copy), arches, args.min_os, signed)
                print(f"macho.py: a copy with {what} passed the checks", file=sys.stderr)
                failed += 1
            except Refused as refusal:
                print(f"ok: refused a copy with {what}: {refusal}")
                passed += 1
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
