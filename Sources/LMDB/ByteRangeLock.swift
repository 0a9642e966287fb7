#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The `fcntl` commands of the store's byte-range locks (``StoreFileLocks``), per platform: the
/// one place that differs between Linux and Darwin.
enum ByteRangeLock {
    #if os(Linux)
    // Open-file-description locks: owned by the open file, so two opens in one process conflict
    // and closing another descriptor of the file releases nothing. <fcntl.h> defines them only
    // under _GNU_SOURCE, which Swift's Glibc module does not set; they are fixed by the Linux ABI.
    static let get: Int32 = 36       // F_OFD_GETLK
    static let set: Int32 = 37       // F_OFD_SETLK
    static let setWait: Int32 = 38   // F_OFD_SETLKW
    #else
    // Darwin has no public open-file-description locks: POSIX record locks on the same byte
    // ranges, owned by the process. Across processes they protect the same way (two lock files for
    // one data.mdb are still refused, writes still serialized); inside a process the writer lock
    // is backed by the environment's own lock and a directory opens once. Their catch, that closing
    // *any* descriptor of data.mdb in the process drops them, is met: while the environment is open
    // only StoreFileLocks and LMDB have data.mdb open (the store's magic check reads it before),
    // and both keep their descriptors until it closes.
    // Not compiled by this project's CI (no Apple toolchain): kept to these three lines.
    static let get: Int32 = F_GETLK
    static let set: Int32 = F_SETLK
    static let setWait: Int32 = F_SETLKW
    #endif
}
