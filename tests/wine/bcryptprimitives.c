/*
 * A test-only bcryptprimitives.dll for running the Windows build under Wine. Never shipped.
 *
 * Rust's standard library gets its random numbers (HashMap seeds, and the `rand` crate's) from
 * ProcessPrng in bcryptprimitives.dll, which Windows 10 and later have and Debian's Wine 8 lacks, so
 * without this file every Rust program fails to start under that Wine. It answers with
 * RtlGenRandom (advapi32's SystemFunction036), which Wine does have, so the numbers stay random.
 * `scripts/cross/windows.sh check` builds it with mingw-w64 into the throw-away Wine prefix's system32.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    /* RtlGenRandom takes a ULONG length, so a larger request is filled in parts. */
    while (length > 0) {
        ULONG part = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, part))
            return FALSE;
        data += part;
        length -= part;
    }
    return TRUE;
}
