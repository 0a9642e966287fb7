import Foundation
import LMDB

#if canImport(Glibc)
import Glibc
#endif

/// The durable, append-only event log: a global order of events (positions gapless from 1),
/// grouped into streams with their own versions, each record checksummed and hash-chained to the
/// one before it.
///
/// The log knows only an event's ID, stream, stream version, position and opaque payload bytes
/// (the encoded envelope, which the domain module supplies).
///
/// One directory is open at most once per process: a second ``open(at:options:)`` of the same
/// path (after resolving symbolic links) throws ``EventStoreError/alreadyOpen(path:)`` until the
/// first `EventLog` is released. Share the instance instead (it is `Sendable`). Other processes
/// may open the same store at the same time: LMDB's writer lock serializes their appends.
///
/// Named databases used by the log (reserved, see ``reservedDatabaseNames``):
/// `events` (position -> record), `eventIDs` (UUID -> position), `streamIndex` (stream key +
/// version -> position: a stream's last key there holds its version), `meta` (format, head hash,
/// last position), and `streams` (empty since format 4: once stream key -> version).
/// Streams are keyed by their binary ``StreamKey`` (33 bytes for a reader's or a book's stream).
/// Callers may open more databases with ``openDatabase(named:keys:values:)`` and write them in the
/// same transaction as an append (``append(_:to:expectedVersion:in:)``).
public final class EventLog: Sendable {
    /// The store format this build writes and reads: 2 since replicas (every record's payload
    /// carries its origin), 3 since binary stream keys (``StreamKey`` in every record and in
    /// `streamIndex`, instead of the stream's text), 4 since fewer tables per append (a stream's
    /// version is its last `streamIndex` key, the `streams` table stays empty; a replica's own head
    /// and latest stamp are its last origin, not stored apart). ``open(at:options:)``
    /// refuses a log of an older format with ``EventStoreError/formatNeedsMigration(found:current:)``;
    /// ``ReadingStore`` migrates one (formats 1 to 3) when it opens it writable, in one transaction.
    public static let formatVersion: UInt32 = 4
    /// The longest stream name, in UTF-8 bytes (LMDB keys are at most 511 bytes).
    public static let maxStreamNameBytes = 500
    /// The databases the log owns.
    public static let reservedDatabaseNames: Set<String> = ["events", "eventIDs", "streams", "streamIndex", "meta"]

    /// The LMDB environment under the log: use it for transactions that span the log and your own
    /// databases.
    public let environment: LMDBEnvironment
    /// The store's directory.
    public let directory: URL

    let events: LMDBDatabase<BigEndianUInt64, RawBytes>
    let eventIDs: LMDBDatabase<UUIDKey, BigEndianUInt64>
    let streams: LMDBDatabase<StreamKeyCodec, BigEndianUInt64>
    let streamIndex: LMDBDatabase<StreamIndexKey, BigEndianUInt64>
    let meta: LMDBDatabase<UTF8String, RawBytes>
    /// The format record as the open read it (``formatVersion`` for a store the open created).
    let openedFormat: UInt32
    let appendSignals = AppendSignals()

    enum MetaKey {
        static let format = "format"
        static let head = "head"
        static let last = "last"
    }

    private init(environment: LMDBEnvironment, directory: URL, databases: LMDBDatabaseSet, format: UInt32) {
        self.environment = environment
        self.directory = directory
        openedFormat = format
        events = databases.database("events")
        eventIDs = databases.database("eventIDs")
        streams = databases.database("streams")
        streamIndex = databases.database("streamIndex")
        meta = databases.database("meta")
    }

    /// Opens the store in `directory`, creating it when the directory is missing or empty
    /// (the directory is created with mode 0700, the files with 0600).
    ///
    /// - Throws: ``EventStoreError/notAStore(path:reason:)`` for a directory that holds something
    ///   else, ``EventStoreError/unsupportedFormat(found:supported:)`` for a newer store,
    ///   ``EventStoreError/formatNeedsMigration(found:current:)`` for an older one (open it with
    ///   ``ReadingStore/open(at:dayStartHour:replica:options:)``, writable, to migrate it) (in
    ///   these cases nothing in the directory is modified: a `lock.mdb` this call created is
    ///   removed), ``EventStoreError/alreadyOpen(path:)``, or ``LMDBError``.
    ///
    /// SPI (`@_spi(RawLog)`), not API: events appended here skip the store's append pipeline
    /// (its checks, origins and views); hosts open a ``ReadingStore``.
    @_spi(RawLog) public static func open(at directory: URL, options: LMDBEnvironmentOptions = LMDBEnvironmentOptions()) throws -> EventLog {
        try open(at: directory, options: options, allowingOlderFormat: false)
    }

    /// Opens the store; with `allowingOlderFormat` a log of an older format opens too (for
    /// ``ReadingStore``, which migrates it before reading it).
    /// With `creating` false, an existing LMDB environment that holds no event log (an empty
    /// one, or another program's) is refused instead of made into a store: commands that read a
    /// store never write into one that is not a store.
    static func open(at directory: URL, options: LMDBEnvironmentOptions, allowingOlderFormat: Bool, creating: Bool = true) throws -> EventLog {
        let fileManager = FileManager.default
        let path = directory.path
        var isDirectory: ObjCBool = false
        if !fileManager.fileExists(atPath: path, isDirectory: &isDirectory) {
            guard !options.readOnly else { throw EventStoreError.notAStore(path: path, reason: "the directory does not exist") }
            try fileManager.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } else if !isDirectory.boolValue {
            throw EventStoreError.notAStore(path: path, reason: "not a directory")
        }
        // Before anything opens them: a FIFO would block the open for ever.
        try LMDBEnvironment.checkFileTypes(directory: path)
        // The store's two files are looked up by name; the directory is listed only when it has
        // no data.mdb, to tell an empty one (a new store) from one that holds something else.
        let dataPath = path + "/data.mdb", lockPath = path + "/lock.mdb"
        var info = stat()
        let wasEmpty: Bool
        if lstat(dataPath, &info) == 0 {
            wasEmpty = false
            try checkLMDBMagic(atPath: dataPath, storePath: path)
        } else {
            guard try fileManager.contentsOfDirectory(atPath: path).isEmpty else {
                throw EventStoreError.notAStore(path: path, reason: "the directory is not empty and holds no data.mdb")
            }
            wasEmpty = true
        }
        let lockExisted = lstat(lockPath, &info) == 0
        let log: EventLog
        do {
            log = try openEnvironment(at: directory, options: options, wasEmpty: wasEmpty,
                                      allowingOlderFormat: allowingOlderFormat, creating: creating)
        } catch {
            // The environment is released by now (it was local to openEnvironment): undo the files
            // this call created (its lock file; both files of a store it was creating).
            if !lockExisted { unlink(lockPath) }
            if wasEmpty { unlink(dataPath) }
            throw error
        }
        if !options.readOnly { restrictPermissions(of: path) }
        return log
    }

    /// Reading history is personal: a writable open leaves the directory 0700 and its files 0600
    /// (also when the store was created in a directory that existed with a wider mode). A mode
    /// that cannot be changed (a directory of another user) is left as it is.
    private static func restrictPermissions(of directory: String) {
        func restrict(_ path: String, to mode: mode_t) {
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & 0o7777 != mode else { return }
            _ = chmod(path, mode)
        }
        restrict(directory, to: 0o700)
        restrict(directory + "/data.mdb", to: 0o600)
        restrict(directory + "/lock.mdb", to: 0o600)
    }

    /// Writes a compact, consistent copy of the store to `destination` (`mdb_env_copy2` with
    /// `MDB_CP_COMPACT`), also while other processes append.
    ///
    /// The copy is written into a hidden temporary directory beside `destination` (mode 0700,
    /// `data.mdb` 0600 whatever the umask), flushed to disk, and renamed to `destination` only
    /// when complete; a failure removes it. So a backup that fails, or is killed, leaves nothing
    /// at `destination` that looks like a store, and the retry is not blocked.
    ///
    /// - Parameter destination: a path that does not exist (its parent is created, 0700, when
    ///   missing) or an empty directory.
    /// - Returns: the size of the copy in bytes.
    /// - Throws: ``EventStoreError/invalidArgument(field:detail:)`` for a destination that is a
    ///   file, a symbolic link or a non-empty directory; ``LMDBError`` (``LMDBError/Kind/diskFull`` for a full disk).
    @discardableResult
    public func backup(to destination: URL) throws -> Int {
        let fileManager = FileManager.default
        let target = destination.standardizedFileURL
        var info = stat()
        if lstat(target.path, &info) == 0, info.st_mode & S_IFMT == S_IFLNK {
            // rename(2) cannot replace a symbolic link with a directory; say so before copying.
            throw EventStoreError.invalidArgument(field: "backup destination", detail: "\(target.path) is a symbolic link; name a new or empty directory itself")
        }
        var isDirectory: ObjCBool = false
        if fileManager.fileExists(atPath: target.path, isDirectory: &isDirectory) {
            guard isDirectory.boolValue else {
                throw EventStoreError.invalidArgument(field: "backup destination", detail: "\(target.path) is a file, not a directory; name a new or empty directory")
            }
            guard try fileManager.contentsOfDirectory(atPath: target.path).isEmpty else {
                throw EventStoreError.invalidArgument(field: "backup destination", detail: "\(target.path) is not empty; name a new or empty directory")
            }
        }
        let parent = target.deletingLastPathComponent()
        if !fileManager.fileExists(atPath: parent.path) {
            try fileManager.createDirectory(at: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        }
        let temporary = parent.appendingPathComponent(".\(target.lastPathComponent).partial-\(UUID().uuidString.prefix(8))")
        guard mkdir(temporary.path, 0o700) == 0 else {
            throw LMDBError.writeFailure(code: errno, operation: "mkdir(\(temporary.path))", directory: parent.path)
        }
        do {
            _ = chmod(temporary.path, 0o700)   // mkdir applied the umask, which can only clear bits
            // The copy must hold at least every event the store holds now.
            let expected = try lastPosition()
            try environment.copy(to: temporary)
            let file = temporary.appendingPathComponent("data.mdb").path
            // mdb_env_copy2 creates the file 0666 less the umask; it is inside a 0700 directory
            // until it is restricted here.
            guard chmod(file, 0o600) == 0 else { throw LMDBError(operation: "chmod(\(file))", code: errno) }
            try Self.checkCopy(at: temporary, holding: expected, source: directory.path)
            try Self.flushToDisk(path: file)
            guard rename(temporary.path, target.path) == 0 else {
                throw LMDBError.writeFailure(code: errno, operation: "rename(\(temporary.path), \(target.path))", directory: parent.path)
            }
            try Self.flushToDisk(path: parent.path)
            return (try fileManager.attributesOfItem(atPath: target.appendingPathComponent("data.mdb").path)[.size] as? Int) ?? 0
        } catch {
            try? fileManager.removeItem(at: temporary)
            throw error
        }
    }

    /// Opens the copy at `temporary` read-only and verifies it (every record decodes, the hash
    /// chain and checksums hold) and that it holds every position up to `expected` at least: a
    /// copy of a damaged store can hold fewer events than the store (a compacting copy skips what
    /// it cannot walk), and such a copy is no backup. Leaves no lock file behind.
    ///
    /// - Throws: ``EventStoreError/backupUnusable(source:reason:)``.
    static func checkCopy(at temporary: URL, holding expected: UInt64, source: String) throws {
        let lockPath = temporary.appendingPathComponent("lock.mdb").path
        defer { unlink(lockPath) }
        let reason: String?
        do {
            let copy = try EventLog.open(at: temporary, options: LMDBEnvironmentOptions(readOnly: true), allowingOlderFormat: true)
            let report = try copy.verify()
            if let first = report.faults.first {
                reason = "the copy fails verification at position \(first.position) (\(report.faults.count) fault(s))"
            } else if report.lastPosition < expected || report.recordCount < report.lastPosition {
                reason = "the copy holds \(report.recordCount) readable events, the store \(expected)"
            } else {
                reason = nil
            }
        } catch {
            reason = "the copy cannot be read: \(error)"
        }
        if let reason { throw EventStoreError.backupUnusable(source: source, reason: reason) }
    }

    /// Flushes a file or a directory (its entries) to disk.
    private static func flushToDisk(path: String) throws {
        #if canImport(Glibc)
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        #else
        let fd = Darwin.open(path, O_RDONLY | O_CLOEXEC)
        #endif
        guard fd >= 0 else { throw LMDBError(operation: "open(\(path))", code: errno) }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw LMDBError.writeFailure(code: errno, operation: "fsync(\(path))", directory: path) }
    }

    /// Opens the environment and validates (or initializes) the store.
    private static func openEnvironment(
        at directory: URL, options: LMDBEnvironmentOptions, wasEmpty: Bool, allowingOlderFormat: Bool, creating: Bool
    ) throws -> EventLog {
        let environment: LMDBEnvironment
        do {
            environment = try LMDBEnvironment(directory: directory, options: options)
        } catch let error as LMDBError where error.kind == .alreadyOpen {
            throw EventStoreError.alreadyOpen(path: directory.path)
        } catch let error as LMDBError where error.kind == .invalidFile {
            throw EventStoreError.notAStore(path: directory.path, reason: error.description)
        }
        let names = try environment.databaseNames()
        let all = ["events", "eventIDs", "streams", "streamIndex", "meta"]
        if names.isEmpty {
            // A new (or never initialized) environment: create the databases and the format record
            // in one transaction.
            guard !options.readOnly else {
                throw EventStoreError.notAStore(path: directory.path, reason: "the store is empty and opened read-only")
            }
            guard creating || wasEmpty else {
                throw EventStoreError.notAStore(path: directory.path, reason: "its data.mdb is an LMDB environment without an event log (empty, or another program's); nothing was written")
            }
            let databases = try environment.openDatabases(named: all, create: true) { txn, databases in
                let meta = databases.database("meta", keys: UTF8String.self, values: RawBytes.self)
                try txn.put(meta, MetaKey.format, BigEndianUInt32.encode(formatVersion), flags: .noOverwrite)
            }
            return EventLog(environment: environment, directory: directory, databases: databases, format: formatVersion)
        }
        guard names.contains("meta") else {
            throw EventStoreError.notAStore(path: directory.path, reason: "an LMDB environment without a meta database")
        }
        let meta = try environment.openDatabases(named: ["meta"], create: false)
            .database("meta", keys: UTF8String.self, values: RawBytes.self)
        guard let format = try environment.read({ txn in try storedFormat(meta, txn) }) else {
            throw EventStoreError.notAStore(path: directory.path, reason: "the meta database has no format record")
        }
        guard format <= formatVersion else {
            throw EventStoreError.unsupportedFormat(found: format, supported: formatVersion)
        }
        guard format >= 1 else {
            throw EventStoreError.notAStore(path: directory.path, reason: "format record \(format) is not a store format")
        }
        guard format == formatVersion || allowingOlderFormat else {
            throw EventStoreError.formatNeedsMigration(found: format, current: formatVersion)
        }
        let missing = all.filter { !names.contains($0) }
        guard missing.isEmpty else {
            throw EventStoreError.notAStore(path: directory.path, reason: "missing databases \(missing)")
        }
        let databases = try environment.openDatabases(named: all, create: false)
        return EventLog(environment: environment, directory: directory, databases: databases, format: format)
    }

    /// The format record in `meta` as `txn` sees it (`nil` when there is none).
    static func storedFormat(_ meta: LMDBDatabase<UTF8String, RawBytes>, _ txn: ReadTransaction) throws -> UInt32? {
        guard let bytes = try txn.get(meta, MetaKey.format) else { return nil }
        return try bytes.withUnsafeBytes { try BigEndianUInt32.decode($0) }
    }

    /// Refuses a `data.mdb` whose first meta page lacks LMDB's magic number, before LMDB maps it.
    private static func checkLMDBMagic(atPath file: String, storePath: String) throws {
        // Page 0 is a meta page: a 16-byte page header, then MDB_meta, whose first field is the
        // magic 0xBEEFC0DE in the machine's byte order.
        #if canImport(Glibc)
        let fd = Glibc.open(file, O_RDONLY | O_CLOEXEC)
        #else
        let fd = Darwin.open(file, O_RDONLY | O_CLOEXEC)
        #endif
        guard fd >= 0 else {
            throw EventStoreError.notAStore(path: storePath, reason: "data.mdb cannot be read")
        }
        defer { close(fd) }
        var head = [UInt8](repeating: 0, count: 20)
        var count = 0
        while count < head.count {
            let n = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + count, $0.count - count, off_t(count)) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { break }
            count += n
        }
        guard count == head.count else {
            throw EventStoreError.notAStore(path: storePath, reason: "data.mdb is too short to be an LMDB file")
        }
        let magic = head.withUnsafeBytes { $0.loadUnaligned(fromByteOffset: 16, as: UInt32.self) }
        guard magic == 0xBEEF_C0DE else {
            throw EventStoreError.notAStore(path: storePath, reason: "data.mdb is not an LMDB file (no magic number)")
        }
    }

    /// Opens (creating it if needed) a caller's named database in the log's environment, for
    /// read models and checkpoints written in the same transaction as appends.
    ///
    /// - Throws: ``EventStoreError/reservedDatabaseName(_:)`` for the log's own names, or ``LMDBError``.
    public func openDatabase<Key: LMDBKeyCodec, Value: LMDBValueCodec>(
        named name: String, keys: Key.Type = Key.self, values: Value.Type = Value.self
    ) throws -> LMDBDatabase<Key, Value> {
        guard !Self.reservedDatabaseNames.contains(name) else { throw EventStoreError.reservedDatabaseName(name) }
        return try environment.openDatabase(named: name, keys: keys, values: values, create: true)
    }

    /// Opens a caller's named databases together: in one read transaction when they all exist (so
    /// opening an existing store writes nothing), else in one write transaction that creates the
    /// missing ones (a read-only environment then throws ``LMDBError`` of kind
    /// ``LMDBError/Kind/notFound``).
    ///
    /// - Throws: ``EventStoreError/reservedDatabaseName(_:)`` for the log's own names, or ``LMDBError``.
    func openDatabases(named names: [String]) throws -> LMDBDatabaseSet {
        if let reserved = names.first(where: Self.reservedDatabaseNames.contains) { throw EventStoreError.reservedDatabaseName(reserved) }
        do {
            return try environment.openDatabases(named: names, create: false)
        } catch let error as LMDBError where error.kind == .notFound && !environment.options.readOnly {
            return try environment.openDatabases(named: names, create: true)
        }
    }
}
