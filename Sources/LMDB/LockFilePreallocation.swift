#if canImport(CLMDBVendored)
import CLMDBVendored
#else
import CLMDB
#endif
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension LMDBEnvironment {
    /// Gives `lock.mdb` its disk blocks before LMDB maps it, so a full disk is an error, never a
    /// signal.
    ///
    /// LMDB creates the lock file with `ftruncate` (a file with no blocks), maps it and writes its
    /// reader table through the map: on a full disk the first write to a page the file system
    /// cannot back kills the process with `SIGBUS`. So a missing or empty lock file is created
    /// here (0600) at the size LMDB would give it and allocated with `posix_fallocate`; a lock file
    /// left without blocks (sparse, by an earlier process that died that way) gets its blocks
    /// too, at its own size. A lock file in use is never resized. Where the file cannot be opened
    /// for writing (read-only media, no permission) nothing is done: LMDB reports or copes.
    /// Linux only (elsewhere LMDB's behaviour is unchanged).
    ///
    /// - Throws: ``LMDBError`` of kind ``LMDBError/Kind/diskFull`` ("no space left on device while
    ///   creating PATH/lock.mdb"), after removing a lock file this call created; another
    ///   `posix_fallocate` failure as a ``LMDBError/Kind/system`` error.
    static func preallocateLockFile(directory: String, maxReaders: UInt32) throws(LMDBError) {
        #if os(Linux)
        let path = directory + "/lock.mdb"
        var fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        let created = fd >= 0
        if fd < 0 && errno == EEXIST { fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW) }
        guard fd >= 0 else { return }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return }
        let length: off_t
        if info.st_size == 0 {
            length = off_t(lockFileSize(maxReaders: maxReaders))
        } else if off_t(info.st_blocks) * 512 < info.st_size {
            length = info.st_size
        } else {
            return
        }
        let rc = posix_fallocate(fd, 0, length)
        guard rc != 0 else { return }
        if created { unlink(path) }
        guard rc == ENOSPC || rc == EDQUOT else {
            throw LMDBError(operation: "posix_fallocate(\(path))", code: rc)
        }
        throw LMDBError(operation: "mdb_env_open(\(directory))", code: ENOSPC,
                        message: "no space left on device while creating \(path) (free some space and retry)")
        #endif
    }

    /// The size LMDB gives a new lock file (`mdb_env_setup_locks`): an `MDB_txninfo` of two
    /// 64-byte cache lines and one reader slot, then 64 bytes for each further reader slot.
    /// Exactly that size, because LMDB takes a larger lock file to hold more readers.
    static func lockFileSize(maxReaders: UInt32) -> Int { (Int(max(maxReaders, 1)) - 1) * 64 + 192 }
}
