import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Locks on the store's own files, beside LMDB's lock file.
///
/// LMDB keeps its writer mutex, its reader table and the id of the last transaction in
/// `lock.mdb`. Two processes that reach one `data.mdb` through two lock files (because `lock.mdb`
/// was deleted while a process had the store open, or because the same `data.mdb` is reached
/// through a second directory that has a lock file of its own) each believe they are the only
/// writer: each builds its next transaction on the last commit *it* saw, and the later commit
/// silently replaces the earlier one. Acknowledged events are lost and `verify` still passes.
///
/// So the store guards the data file itself, with byte-range locks (``ByteRangeLock``: on Linux
/// locks owned by one open file description, released when it is closed; on Darwin POSIX record
/// locks, owned by the process; both released when the process dies):
/// - **writer** (byte 0 of `data.mdb`, exclusive): held around every write transaction and
///   around the open, so writes through any lock file are serialized and no environment is
///   opened half-way through another process's commit. With the vendored LMDB it is *the*
///   writer lock (LMDB's own, a POSIX semaphore that a dying process would leave taken, is
///   switched off: `mdb_env_set_writer_lock_external`);
/// - **presence** (byte 1 of `data.mdb` and a byte far beyond LMDB's own reader locks in
///   `lock.mdb`, both shared): held while the environment is open. At open, a process that finds
///   someone present on `data.mdb` but nobody on *its* `lock.mdb` knows that the others use
///   another lock file, and refuses to open (``LMDBError/Kind/lockFileMismatch``);
/// - **rebuild** (byte 2 of `data.mdb`, exclusive, never waited for): held by a rebuild of the
///   views, so a second rebuild in any process is refused instead of racing the first.
///
/// LMDB itself places POSIX locks only in `lock.mdb` (byte 0, and one byte at each reader's
/// process id), never in `data.mdb`, so these ranges cannot meet LMDB's.
///
/// `@unchecked Sendable` is safe: the two descriptors are fixed at init and closed only in
/// `deinit`; `fcntl` on them is thread-safe, and the in-process exclusion of rebuilds is a lock.
final class StoreFileLocks: @unchecked Sendable {
    private let dataFD: Int32
    /// Set once by ``takePresence(directory:)``, during the open, before the environment is shared.
    private var lockFileFD: Int32 = -1
    private let rebuildInProcess = NSLock()

    private enum Byte {
        static let writer = 0
        static let presence = 1
        static let rebuild = 2
        /// In `lock.mdb`: beyond any process id (LMDB's reader locks sit at the pid's offset;
        /// Linux pids are below 2^22).
        static let lockFilePresence = 1 << 40
    }

    /// Opens `data.mdb` in `directory` (creating it empty, 0600, when `writable` and missing)
    /// for locking; falls back to reading only on read-only media. Call
    /// ``takePresence(directory:)`` once LMDB has opened the environment.
    init(directory: String, writable: Bool) throws {
        let dataPath = directory + "/data.mdb"
        var fd: Int32 = writable ? open(dataPath, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o600) : -1
        if fd < 0 {
            if writable && errno != EROFS && errno != EACCES {
                throw LMDBError(operation: "open(\(dataPath))", code: errno)
            }
            fd = open(dataPath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            if fd < 0 { throw LMDBError(operation: "open(\(dataPath))", code: errno) }
        }
        dataFD = fd
        self.writable = fcntl(fd, F_GETFL) & O_ACCMODE == O_RDWR
    }

    /// Whether the data file is open for writing (an exclusive writer lock needs it).
    let writable: Bool

    deinit {
        // Closing the descriptions releases every lock they hold.
        close(dataFD)
        if lockFileFD >= 0 { close(lockFileFD) }
    }

    /// The size of `data.mdb` in bytes.
    func dataFileSize() throws -> Int {
        var info = stat()
        guard fstat(dataFD, &info) == 0 else { throw LMDBError(operation: "fstat(data.mdb)", code: errno) }
        return Int(info.st_size)
    }

    /// Grows `data.mdb` to `bytes` when it is shorter (zeros; never shrinks it), and with
    /// `durably` flushes the new length to disk. The pages it adds are free pages LMDB never
    /// wrote (see ``LMDBEnvironment/coverFreeTail(durably:)``); LMDB never reads a free page.
    func extendData(toAtLeast bytes: Int, durably: Bool) throws {
        guard writable, try dataFileSize() < bytes else { return }
        guard ftruncate(dataFD, off_t(bytes)) == 0 else { throw LMDBError(operation: "ftruncate(data.mdb)", code: errno) }
        if durably, fsync(dataFD) != 0 { throw LMDBError(operation: "fsync(data.mdb)", code: errno) }
    }

    /// Reads `count` bytes of `data.mdb` at `offset` (fewer at the end of the file).
    func readData(at offset: Int, count: Int) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let n = buffer.withUnsafeMutableBytes { pread(dataFD, $0.baseAddress! + done, count - done, off_t(offset + done)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw LMDBError(operation: "pread(data.mdb)", code: errno)
            }
            if n == 0 { break }
            done += n
        }
        return Array(buffer[..<done])
    }

    /// Blocks until this process holds the writer lock (shared when the data file is read-only,
    /// which still keeps a read-only open from running during another process's commit).
    func lockWriter() throws {
        try place(dataFD, writable ? F_WRLCK : F_RDLCK, at: Byte.writer, wait: true, what: "writer lock")
    }

    /// Releases the writer lock.
    func unlockWriter() {
        try? place(dataFD, F_UNLCK, at: Byte.writer, wait: false, what: "writer lock")
    }

    /// Runs `body` holding the writer lock.
    func withWriter<R>(_ body: () throws -> R) throws -> R {
        try lockWriter()
        defer { unlockWriter() }
        return try body()
    }

    /// Checks that every other process with this `data.mdb` open uses this `lock.mdb`, then marks
    /// this process present on both. Call once, with the writer lock held (opens are serialized
    /// by it), after LMDB opened the environment (and created its lock file).
    ///
    /// - Throws: ``LMDBError/Kind/lockFileMismatch`` when another process has the data file open
    ///   through another lock file.
    func takePresence(directory: String) throws {
        let lockPath = directory + "/lock.mdb"
        // Without a lock file (read-only media where LMDB could not create one) there is nothing
        // to compare: LMDB then reads without a reader table.
        var lockFD = open(lockPath, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        if lockFD < 0 { lockFD = open(lockPath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) }
        if lockFD >= 0 { lockFileFD = lockFD }
        let othersOnData = try isHeld(dataFD, at: Byte.presence)
        if lockFD >= 0, othersOnData, try !isHeld(lockFD, at: Byte.lockFilePresence) {
            throw LMDBError(
                operation: "mdb_env_open(\(directory))", code: LMDBError.lockFileMismatchCode,
                message: "another process has this data.mdb open through a different lock.mdb (the lock file was "
                    + "deleted or replaced while the store was open, or the store is reached through a second "
                    + "directory); opening it now could lose acknowledged events: close the other process, then open again")
        }
        try place(dataFD, F_RDLCK, at: Byte.presence, wait: true, what: "presence lock")
        if lockFD >= 0 {
            try place(lockFD, F_RDLCK, at: Byte.lockFilePresence, wait: true, what: "presence lock on lock.mdb")
        }
    }

    /// Takes the rebuild lock without waiting; false when a rebuild runs (in any process).
    func tryLockRebuild() throws -> Bool {
        guard rebuildInProcess.try() else { return false }
        do {
            var lock = Self.range(writable ? F_WRLCK : F_RDLCK, at: Byte.rebuild)
            if fcntl(dataFD, ByteRangeLock.set, &lock) != 0 {
                let code = errno
                if code == EAGAIN || code == EACCES {
                    rebuildInProcess.unlock()
                    return false
                }
                throw LMDBError(operation: "fcntl(data.mdb, rebuild lock)", code: code)
            }
            return true
        } catch {
            rebuildInProcess.unlock()
            throw error
        }
    }

    /// Releases the rebuild lock.
    func unlockRebuild() {
        try? place(dataFD, F_UNLCK, at: Byte.rebuild, wait: false, what: "rebuild lock")
        rebuildInProcess.unlock()
    }

    // MARK: fcntl

    private static func range(_ type: Int32, at byte: Int) -> flock {
        var lock = flock()
        lock.l_type = Int16(type)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = off_t(byte)
        lock.l_len = 1
        return lock
    }

    private func place(_ fd: Int32, _ type: Int32, at byte: Int, wait: Bool, what: String) throws {
        var lock = Self.range(type, at: byte)
        while fcntl(fd, wait ? ByteRangeLock.setWait : ByteRangeLock.set, &lock) != 0 {
            let code = errno
            if code == EINTR { continue }
            throw LMDBError(operation: "fcntl(data.mdb, \(what))", code: code)
        }
    }

    /// Whether another open file description holds a lock on `byte` of `fd`'s file.
    private func isHeld(_ fd: Int32, at byte: Int) throws -> Bool {
        var lock = Self.range(F_WRLCK, at: byte)
        guard fcntl(fd, ByteRangeLock.get, &lock) == 0 else {
            throw LMDBError(operation: "fcntl(data.mdb, get lock)", code: errno)
        }
        return lock.l_type != Int16(F_UNLCK)
    }
}
