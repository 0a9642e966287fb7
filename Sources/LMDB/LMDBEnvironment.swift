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

/// An open LMDB environment: one directory holding `data.mdb` and `lock.mdb`.
///
/// Transactions are synchronous closures (``read(_:)``, ``write(_:)``): LMDB ties a write
/// transaction to the thread that began it, so there is no `await` inside. The environment is
/// opened with `MDB_NOTLS`, clears stale reader slots at open (``staleReadersCleared``), creates
/// its files with mode 0600 (the process umask can only remove bits from that), and closes its
/// handle when released. A directory can be open only once per process (LMDB's locks are per
/// process): a second open throws ``LMDBError/Kind/alreadyOpen``.
///
/// `@unchecked Sendable` is safe because the `MDB_env` handle is thread-safe for what this class
/// does with it (LMDB documents the environment as shareable between threads; `MDB_NOTLS` frees
/// read transactions from thread-local slots), write transactions are serialized by `writeLock`,
/// `mdb_env_set_mapsize` runs only under the exclusive side of `gate` while every transaction
/// holds its shared side, and the database-handle cache is guarded by `Locked`.
public final class LMDBEnvironment: @unchecked Sendable {
    /// The `MDB_env *` handle.
    let handle: OpaquePointer
    /// The real path of the directory (symbolic links resolved).
    public let path: String
    /// The options this environment was opened with.
    public let options: LMDBEnvironmentOptions
    /// The number of stale reader slots (left by dead processes) `mdb_reader_check` cleared at open.
    public let staleReadersCleared: Int

    /// Whether this build's LMDB locks with named POSIX semaphores (the vendored LMDB: Apple
    /// platforms, and Linux with the `VendoredLMDB` trait), where
    /// ``LMDBEnvironmentOptions/semaphorePrefix`` applies; false with Debian's LMDB (mutexes in
    /// `lock.mdb`).
    public static var usesPOSIXSemaphores: Bool {
        #if canImport(CLMDBVendored)
        true
        #else
        false
        #endif
    }

    let gate = TransactionGate()
    /// Where the data file is mapped in this process (start, end), from ``mappedRange(of:)``;
    /// read again after every resize. `nil` where it cannot be learned: values are then not
    /// bounds-checked (see ``MapBounds``).
    let mapRange = Locked<(start: UInt, end: UInt)?>(nil)
    private let writeLock = NSLock()
    /// Locks on `data.mdb` itself (see ``StoreFileLocks``): writes and opens are serialized
    /// across lock files, and a second lock file for the same data is refused at open.
    let fileLocks: StoreFileLocks
    private let databaseHandles = Locked<[String: MDB_dbi]>([:])

    /// Opens the environment in an existing `directory`.
    ///
    /// - Throws: ``LMDBError``: ``LMDBError/Kind/alreadyOpen`` when this process has the
    ///   directory open already; LMDB's error when `mdb_env_open` fails (for example
    ///   ``LMDBError/Kind/invalidFile`` for a `data.mdb` that is not LMDB);
    ///   ``LMDBError/Kind/diskFull`` ("no space left on device while creating PATH/lock.mdb", or
    ///   `data.mdb`) when the disk cannot hold a new lock or data file: the lock file gets its disk
    ///   blocks before LMDB maps it, so a full disk is this error, never a `SIGBUS`.
    public init(directory: URL, options: LMDBEnvironmentOptions = LMDBEnvironmentOptions()) throws {
        try options.validateSemaphorePrefix()
        guard let resolved = realpath(directory.path, nil) else {
            throw LMDBError(operation: "realpath(\(directory.path))", code: errno)
        }
        let path = String(cString: resolved)
        free(resolved)
        try Self.checkFileTypes(directory: path)
        try Self.preallocateLockFile(directory: path, maxReaders: options.maxReaders)

        var created: OpaquePointer?
        try LMDBError.check(mdb_env_create(&created), "mdb_env_create")
        let env = created!
        var registered = false
        var isShort = false
        do {
            try LMDBError.check(mdb_env_set_mapsize(env, options.mapSize), "mdb_env_set_mapsize(\(path))")
            try LMDBError.check(mdb_env_set_maxreaders(env, options.maxReaders), "mdb_env_set_maxreaders(\(path))")
            try LMDBError.check(mdb_env_set_maxdbs(env, options.maxDatabases), "mdb_env_set_maxdbs(\(path))")
            #if canImport(CLMDBVendored)
            // LMDB's writer lock here is a POSIX semaphore, which stays taken when a process dies
            // in a write (iOS ends apps at any moment): every other process would wait forever.
            // Every write transaction already runs under the writer lock on data.mdb
            // (StoreFileLocks, released by the kernel when its holder dies) and, in the process,
            // under writeLock, so that lock is the writer lock (patch 0002 of the vendored LMDB).
            try LMDBError.check(mdb_env_set_writer_lock_external(env, 1), "mdb_env_set_writer_lock_external(\(path))")
            if let prefix = options.semaphorePrefix {
                try LMDBError.check(mdb_env_set_semprefix(env, prefix), "mdb_env_set_semprefix(\(prefix))")
            }
            #endif
            guard OpenPathRegistry.register(path) else {
                throw LMDBError(
                    operation: "mdb_env_open(\(path))", code: LMDBError.alreadyOpenCode,
                    message: "the directory is already open in this process")
            }
            registered = true
            var flags = UInt32(MDB_NOTLS)
            if options.readOnly { flags |= UInt32(MDB_RDONLY) }
            let locks = try StoreFileLocks(directory: path, writable: !options.readOnly)
            // The open runs under the writer lock: no other process is half-way through a commit
            // while LMDB picks the meta page, and opens are checked one at a time.
            try locks.withWriter {
                let isNew = try locks.dataFileSize() == 0
                isShort = try Self.isDataFileShort(locks, path: path)
                // 0600: reading history is personal. open(2) applies the umask, which can only clear bits.
                let rc = mdb_env_open(env, path, flags, 0o600)
                if isNew && (rc == ENOSPC || rc == EDQUOT) {
                    // LMDB writes a new data file's meta pages with pwrite: a full disk is an error here.
                    throw LMDBError(operation: "mdb_env_open(\(path))", code: ENOSPC,
                                    message: "no space left on device while creating \(path)/data.mdb (free some space and retry)")
                }
                try LMDBError.check(rc, "mdb_env_open(\(path))")
                try locks.takePresence(directory: path)
            }
            fileLocks = locks
            if !options.readOnly { try Self.applyFileProtection(directory: path) }
            var dead: Int32 = 0
            try LMDBError.check(mdb_reader_check(env, &dead), "mdb_reader_check(\(path))")
            self.staleReadersCleared = Int(dead)
        } catch {
            // lmdb.h, mdb_env_open: "If this function fails, #mdb_env_close() must be called to
            // discard the #MDB_env handle." The same holds for every failure after mdb_env_create.
            mdb_env_close(env)
            if registered { OpenPathRegistry.unregister(path) }
            throw error
        }
        self.handle = env
        self.path = path
        self.options = options
        refreshMapRange()
        // Before anything writes: LMDB follows a damaged page blindly (SIGSEGV, SIGBUS). Every
        // write transaction reads the free-page list; a whole-store reader asks for every page.
        if options.checkPages || isShort {
            // A short file opens only when every page in use lies within it (see isDataFileShort).
            try checkPageStructure()
            if isShort, !options.readOnly { try fileLocks.withWriter { try coverFreeTail(durably: true) } }
        } else if !options.readOnly {
            try checkPageStructure(freeListOnly: true)
        }
    }

    deinit {
        // No transaction can be active: every transaction closure holds a strong reference.
        mdb_env_close(handle)
        OpenPathRegistry.unregister(path)
    }

    /// The current size of the memory map in bytes (grows when writes fill it).
    public var mapSize: Int {
        gate.shared {
            var info = MDB_envinfo()
            mdb_env_info(handle, &info)
            return info.me_mapsize
        }
    }

    /// Runs `body` in a read transaction (a consistent snapshot) and returns its result.
    ///
    /// Keep read transactions short: a long one keeps old pages from being reused. Readers never
    /// wait for writers. Do not start another transaction inside `body`.
    @discardableResult
    public func read<R>(_ body: (ReadTransaction) throws -> R) throws -> R {
        while true {
            let outcome: Outcome<R> = try gate.shared {
                var txn: OpaquePointer?
                let rc = mdb_txn_begin(handle, nil, UInt32(MDB_RDONLY), &txn)
                if rc == MDB_MAP_RESIZED { return .adoptNewMapSize }
                try LMDBError.check(rc, "mdb_txn_begin(read, \(path))")
                let transaction = ReadTransaction(handle: txn!, bounds: .current(environment: handle, map: mapRange.withLock { $0 }, write: false))
                defer { transaction.invalidate() }
                let value: R
                do {
                    value = try body(transaction)
                } catch {
                    mdb_txn_abort(txn)
                    throw error
                }
                // Committing a read-only transaction keeps database handles it opened.
                try LMDBError.check(mdb_txn_commit(txn), "mdb_txn_commit(read, \(path))")
                return .done(value)
            }
            switch outcome {
            case .done(let value): return value
            case .adoptNewMapSize: try adoptNewMapSize()
            case .growMap: try growMap()
            }
        }
    }

    /// Runs `body` in the write transaction and returns its result: commits when `body` returns,
    /// aborts when it throws (the error `body` threw is the one you get; an abort cannot replace it).
    ///
    /// Writes are serialized: in this process by a lock, across processes by the writer lock on
    /// `data.mdb` (see ``StoreFileLocks``; with Debian's LMDB also by LMDB's robust writer mutex),
    /// which the system releases when a process dies in a write.
    /// When the map is full (`MDB_MAP_FULL`, in a put or in the commit), the transaction is
    /// aborted, the map doubled and `body` run again, invisibly: so `body` may run more than
    /// once and should have no effect outside the transaction. Do not start another transaction
    /// inside `body`.
    ///
    /// - Throws: what `body` throws, or ``LMDBError`` (`EACCES` on a read-only environment).
    @discardableResult
    public func write<R>(_ body: (WriteTransaction) throws -> R) throws -> R {
        guard !options.readOnly else {
            throw LMDBError(operation: "mdb_txn_begin(write, \(path))", code: EACCES)
        }
        writeLock.lock()
        defer { writeLock.unlock() }
        // Across processes, LMDB's writer mutex lives in lock.mdb; this lock lives in data.mdb, so
        // two lock files for one data file still cannot interleave their commits.
        try fileLocks.lockWriter()
        defer { fileLocks.unlockWriter() }
        while true {
            let outcome: Outcome<R> = try gate.shared {
                var txn: OpaquePointer?
                let rc = mdb_txn_begin(handle, nil, 0, &txn)
                if rc == MDB_MAP_RESIZED { return .adoptNewMapSize }
                try LMDBError.check(rc, "mdb_txn_begin(write, \(path))")
                let transaction = WriteTransaction(handle: txn!, bounds: .current(environment: handle, map: mapRange.withLock { $0 }, write: true))
                defer { transaction.invalidate() }
                let value: R
                do {
                    value = try body(transaction)
                } catch {
                    mdb_txn_abort(txn)
                    if transaction.hitMapFull { return .growMap }
                    throw error
                }
                if transaction.hitMapFull {
                    mdb_txn_abort(txn)
                    return .growMap
                }
                // mdb_txn_commit frees the handle whether it succeeds or fails.
                let commit = mdb_txn_commit(txn)
                if commit == MDB_MAP_FULL { return .growMap }
                if commit != 0 { throw LMDBError.writeFailure(code: commit, operation: "mdb_txn_commit(\(path))", directory: path) }
                // Best effort: the commit stands either way. Left short (a full disk, a crash
                // before the new length reached the disk), the next open walks the pages instead.
                try? coverFreeTail(durably: false)
                let committed = transaction.didWrite ? transaction.id : nil
                for handler in transaction.commitHandlers { handler(committed) }
                return .done(value)
            }
            switch outcome {
            case .done(let value): return value
            case .adoptNewMapSize: try adoptNewMapSize()
            case .growMap: try growMap()
            }
        }
    }

    /// Opens a named database, creating it when `create` is true (and the environment is writable).
    ///
    /// Handles are cached by name: opening the same name again returns the same handle. The key
    /// and value codecs are the caller's promise about what the database holds. Call it outside
    /// transaction closures (it runs its own transaction).
    ///
    /// - Throws: ``LMDBError`` of kind ``LMDBError/Kind/notFound`` when the database does not
    ///   exist and `create` is false (or the environment is read-only).
    public func openDatabase<Key: LMDBKeyCodec, Value: LMDBValueCodec>(
        named name: String, keys: Key.Type = Key.self, values: Value.Type = Value.self, create: Bool = true
    ) throws -> LMDBDatabase<Key, Value> {
        if let cached = databaseHandles.withLock({ $0[name] }) {
            return LMDBDatabase(name: name, handle: cached)
        }
        let handles = try openHandles(named: [name], create: create && !options.readOnly)
        return LMDBDatabase(name: name, handle: handles[name]!)
    }

    /// Opens several named databases in one transaction, then runs `initialize` in the same
    /// write transaction (when `create` is true), so creation and first contents commit together.
    ///
    /// - Throws: ``LMDBError`` (of kind ``LMDBError/Kind/notFound`` for a missing database when
    ///   `create` is false), or what `initialize` throws (nothing is then created).
    package func openDatabases(
        named names: [String], create: Bool, initialize: ((WriteTransaction, LMDBDatabaseSet) throws -> Void)? = nil
    ) throws -> LMDBDatabaseSet {
        let handles = try openHandles(named: names, create: create, initialize: initialize.map { initialize in
            { txn, handles in try initialize(txn, LMDBDatabaseSet(handles: handles)) }
        })
        return LMDBDatabaseSet(handles: handles)
    }

    private func openHandles(
        named names: [String], create: Bool, initialize: ((WriteTransaction, [String: MDB_dbi]) throws -> Void)? = nil
    ) throws -> [String: MDB_dbi] {
        // mdb_dbi_open must not run in two transactions at once: the write lock serializes it.
        let handles: [String: MDB_dbi]
        if create {
            handles = try write { txn in
                var opened: [String: MDB_dbi] = [:]
                for name in names { opened[name] = try txn.openHandle(named: name, create: true) }
                try initialize?(txn, opened)
                return opened
            }
        } else {
            writeLock.lock()
            defer { writeLock.unlock() }
            handles = try read { txn in
                var opened: [String: MDB_dbi] = [:]
                for name in names { opened[name] = try txn.openHandle(named: name, create: false) }
                return opened
            }
        }
        databaseHandles.withLock { $0.merge(handles) { _, new in new } }
        return handles
    }

    /// The names of the named databases stored in the environment (the keys of the main database).
    public func databaseNames() throws -> [String] {
        // mdb_dbi_open (of the main database) must not run in two transactions at once.
        writeLock.lock()
        defer { writeLock.unlock() }
        return try read { txn in
            let main = LMDBDatabase<RawBytes, RawBytes>(name: "main", handle: try txn.openHandle(named: nil, create: false))
            var names: [String] = []
            try txn.forEach(main) { key, _ in
                names.append(String(decoding: key, as: UTF8.self))
                return true
            }
            return names
        }
    }

    /// Copies the environment to `directory` (which must exist and be empty), compacting it
    /// (`mdb_env_copy2` with `MDB_CP_COMPACT`); safe while other transactions run. The copy is
    /// written as LMDB creates it (mode 0666 less the umask): `EventLog.backup(to:)` (in EventStoreLMDB) is the
    /// safe way to make a backup.
    public func copy(to directory: URL) throws {
        try gate.shared {
            let rc = mdb_env_copy2(handle, directory.path, UInt32(MDB_CP_COMPACT))
            if rc != 0 { throw LMDBError.writeFailure(code: rc, operation: "mdb_env_copy2(\(directory.path))", directory: directory.path) }
        }
    }

    /// Runs `body` holding the rebuild lock (see ``StoreFileLocks``); `nil` without running it
    /// when another rebuild (in this or another process) holds it.
    package func withRebuildLock<R>(_ body: () throws -> R) throws -> R? {
        guard try fileLocks.tryLockRebuild() else { return nil }
        defer { fileLocks.unlockRebuild() }
        return try body()
    }

    /// Whether `data.mdb` is shorter than its own meta page says; refuses one too short for its
    /// two meta pages or whose last page lies beyond any file size.
    ///
    /// A short file is not always damaged: LMDB counts in its last page the pages a transaction
    /// took and gave back before its commit (a value written and deleted in one transaction,
    /// an overflow run freed while still dirty). Those go to the free list unwritten, so when
    /// they were the highest-numbered pages the file ends before them (issue 36: a 100,000-book
    /// JSON Lines import left 222 such pages, and every later open refused the store). A copy
    /// cut short, a truncated file or a disk that filled while the file grew also ends early,
    /// and there pages in use are missing: LMDB would map them and the process would die with
    /// SIGBUS on the first read of one. So the caller walks every tree of a short file with
    /// `pread` (``checkPageStructure(freeListOnly:)``, which refuses the file when the free list
    /// does not name every page beyond its end, or when a page in use lies there) before anything
    /// reads it through the map.
    static func isDataFileShort(_ locks: StoreFileLocks, path: String) throws -> Bool {
        let size = try locks.dataFileSize()
        guard size > 0 else { return false }   // a new environment: LMDB writes its meta pages
        // Each of pages 0 and 1 is a 16-byte page header and an MDB_meta (64-bit layout): magic
        // u32 at 16, version u32 at 20, address at 24, map size at 32, two MDB_db records of 48
        // bytes at 40 (the first one's md_pad is the page size), last page at 136, txnid at 144.
        func meta(_ bytes: [UInt8]) -> (pageSize: Int, lastPage: UInt64, txnid: UInt64)? {
            guard bytes.count >= 152 else { return nil }
            return bytes.withUnsafeBytes { raw in
                guard raw.loadUnaligned(fromByteOffset: 16, as: UInt32.self) == 0xBEEF_C0DE else { return nil }
                return (Int(raw.loadUnaligned(fromByteOffset: 40, as: UInt32.self)),
                        raw.loadUnaligned(fromByteOffset: 136, as: UInt64.self),
                        raw.loadUnaligned(fromByteOffset: 144, as: UInt64.self))
            }
        }
        func damaged(_ detail: String) -> LMDBError {
            LMDBError(operation: "mdb_env_open(\(path))", code: MDB_CORRUPTED,
                      message: "data.mdb is damaged or incomplete: \(detail) (a copy cut short, a truncated file, or a disk "
                          + "that filled while the file grew); restore it from a backup")
        }
        // A first page LMDB does not recognize is LMDB's to refuse (MDB_INVALID).
        guard let first = meta(try locks.readData(at: 0, count: 152)) else { return false }
        guard first.pageSize >= 512, first.pageSize <= 1 << 16, first.pageSize & (first.pageSize - 1) == 0 else { return false }
        guard size >= 2 * first.pageSize else {
            throw damaged("it is \(size) bytes, shorter than its two meta pages (\(2 * first.pageSize) bytes)")
        }
        let second = meta(try locks.readData(at: first.pageSize, count: 152))
        let current = second.map { $0.txnid > first.txnid ? $0 : first } ?? first
        let (needed, overflow) = (current.lastPage + 1).multipliedReportingOverflow(by: UInt64(first.pageSize))
        if overflow { throw damaged("its meta page says its pages reach beyond any file size") }
        return needed > UInt64(size)
    }

    /// Grows `data.mdb` to cover every page its newest meta page counts, when free pages LMDB
    /// never wrote end it early (see ``isDataFileShort(_:path:)``), so that the next open need not
    /// walk every page to tell it from a file cut short. Run under the writer lock, after a
    /// commit or a walk that showed no page in use beyond the end. The added pages are zeros,
    /// and free: LMDB writes a free page whole before it uses it again.
    func coverFreeTail(durably: Bool) throws {
        var info = MDB_envinfo()
        mdb_env_info(handle, &info)
        var stat = MDB_stat()
        mdb_env_stat(handle, &stat)
        try fileLocks.extendData(toAtLeast: (info.me_last_pgno + 1) * Int(stat.ms_psize), durably: durably)
    }

    // MARK: - Map size

    private enum Outcome<R> {
        case done(R)
        case adoptNewMapSize
        case growMap
    }

    /// Doubles the map; runs with no transaction of this process active.
    private func growMap() throws {
        try gate.exclusive {
            var info = MDB_envinfo()
            mdb_env_info(handle, &info)
            let newSize = max(info.me_mapsize * 2, 1 << 20)
            try LMDBError.check(mdb_env_set_mapsize(handle, newSize), "mdb_env_set_mapsize(\(newSize))")
            refreshMapRange()
        }
    }

    /// Adopts the map size another process set (`mdb_env_set_mapsize(0)`), with no transaction active.
    private func adoptNewMapSize() throws {
        try gate.exclusive {
            try LMDBError.check(mdb_env_set_mapsize(handle, 0), "mdb_env_set_mapsize(0)")
            refreshMapRange()
        }
    }

    /// Learns again where `data.mdb` is mapped (``mappedRange(of:)``).
    func refreshMapRange() {
        let found = Self.mappedRange(of: path + "/data.mdb")
        mapRange.withLock { $0 = found }
    }
}

/// Named databases opened together by ``LMDBEnvironment/openDatabases(named:create:initialize:)``;
/// the caller names each one's codecs when it takes it out of the set.
package struct LMDBDatabaseSet: Sendable {
    fileprivate let handles: [String: MDB_dbi]

    /// The database `name` of the set, typed by the caller's codecs (a promise about its contents,
    /// as in ``LMDBEnvironment/openDatabase(named:keys:values:create:)``). `name` must be one of
    /// the names the set was opened with.
    package func database<Key: LMDBKeyCodec, Value: LMDBValueCodec>(
        _ name: String, keys: Key.Type = Key.self, values: Value.Type = Value.self
    ) -> LMDBDatabase<Key, Value> {
        guard let handle = handles[name] else { preconditionFailure("database \(name) was not opened in this set") }
        return LMDBDatabase(name: name, handle: handle)
    }
}
