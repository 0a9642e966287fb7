#if canImport(CLMDBVendored)
import CLMDBVendored
#else
import CLMDB
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A write transaction, valid only inside the closure of ``LMDBEnvironment/write(_:)``.
///
/// It is committed when the closure returns and aborted when it throws. Everything a
/// `ReadTransaction` reads, it reads too, including its own uncommitted writes.
public final class WriteTransaction: ReadTransaction {
    /// Set when a put hit `MDB_MAP_FULL`: the environment then grows the map and re-runs the
    /// closure, whatever the closure did with the error.
    var hitMapFull = false
    /// Run by the environment after the commit succeeded, in order (``afterCommit(_:)``).
    private(set) var commitHandlers: [(_ committedID: UInt64?) -> Void] = []
    /// Set by every put and delete that succeeded (each changes a page). LMDB commits a
    /// transaction that changed nothing without a new transaction ID; one that changed a page
    /// always takes one. A transaction may change pages without setting it (a drop): so when it is
    /// set the commit took a new ID, and when it is not the commit may or may not have.
    private(set) var didWrite = false
    /// Objects that live as long as this transaction (``attachment(_:make:)``).
    private var attachments: [ObjectIdentifier: AnyObject] = [:]

    /// The transaction's ID (`mdb_txn_id`): LMDB numbers committed write transactions one after
    /// another across every process of the environment, and a write transaction's ID is the last
    /// committed one plus one. So if this process committed transaction `n` and its next write
    /// transaction has ID `n + 1`, nobody else committed in between.
    package var id: UInt64 { UInt64(mdb_txn_id(handle)) }

    /// Hands the pages of `data.mdb` that this process has mapped and read back to the kernel
    /// (`madvise(MADV_DONTNEED)` on LMDB's map), so that they stop counting in its resident memory.
    /// Nothing is lost or written: LMDB here maps the file shared and read-only (it writes with
    /// `pwrite`, and this transaction's changed pages are its own buffers, outside the map), so the
    /// data stays in the page cache and a page read again is mapped again, with the same bytes;
    /// no other mapping can be hit, because the map cannot move while a transaction is open (the
    /// environment grows it only with none active). A long bulk write (an import committed in
    /// parts) has it done every few hundred accesses (``releaseMappedPages(every:)``), so its
    /// resident memory stays at its last look-ups' pages instead of growing with the store it
    /// reads back. Does nothing where the map's place is unknown (see ``MapBounds``).
    public func releaseMappedPages() { dropMappedPages() }

    /// Releases the mapped pages (as ``releaseMappedPages()``) after every `accesses` accesses to
    /// the map from now on, until the transaction ends: each `get`, put, delete and step of a
    /// cursor walk counts one. For a bulk write whose reads hit pages all over a large store: the
    /// kernel maps about 16 pages around each page a read touches (fault-around), so a few
    /// thousand random look-ups map hundreds of MiB of the file; releasing every 512 accesses
    /// keeps that at tens of MiB.
    public func releaseMappedPages(every accesses: Int) { dropMappedPages(every: accesses) }

    /// Runs `body` once this transaction has committed (after `mdb_txn_commit` returned success,
    /// still under the environment's write lock); never when it aborts or is run again after the
    /// map grew (that run is a new transaction). `body` gets ``id`` when the transaction put or
    /// deleted something (LMDB then made it the last committed transaction), `nil` otherwise: then
    /// LMDB committed no new transaction (the last committed one is still `id - 1`), or, after a
    /// drop, possibly this one; a caller that keeps state per transaction ID must treat `nil` as
    /// "`id - 1` at most", never as "`id`".
    package func afterCommit(_ body: @escaping (_ committedID: UInt64?) -> Void) { commitHandlers.append(body) }

    /// The object attached to this transaction under `key`, made by `make` on first use: state
    /// that must live exactly as long as the transaction (dropped with it when it aborts).
    package func attachment<T: AnyObject>(_ key: ObjectIdentifier, make: () -> T) -> T {
        if let found = attachments[key] as? T { return found }
        let made = make()
        attachments[key] = made
        return made
    }

    /// Stores `value` under `key`.
    ///
    /// - Throws: ``LMDBError`` of kind ``LMDBError/Kind/keyExists`` when `flags` contain
    ///   ``LMDBPutFlags/noOverwrite`` and the key is stored, or of kind
    ///   ``LMDBError/Kind/appendOutOfOrder`` when they contain ``LMDBPutFlags/append`` and the key
    ///   is not greater than the database's last key; either way nothing is written.
    ///
    /// Inlinable, like ``ReadTransaction/get(_:_:)``: a client module specializes it for its
    /// codecs. Unspecialized, the store's append path encoded every composite key through
    /// witness tables (`KeyPair.encode` and both parts': about 6,400 instructions an appended
    /// event, issue 37).
    @inlinable
    public func put<Key, Value>(
        _ database: LMDBDatabase<Key, Value>, _ key: Key.Item, _ value: Value.Item, flags: LMDBPutFlags = []
    ) throws {
        try putRaw(database, Key.encode(key), Value.encode(value), flags: flags)
    }

    /// Stores raw bytes (used by the log and by tests that damage records on purpose).
    @usableFromInline
    package func putRaw<Key, Value>(
        _ database: LMDBDatabase<Key, Value>, _ key: [UInt8], _ value: [UInt8], flags: LMDBPutFlags
    ) throws(LMDBError) {
        let result: Result<Void, LMDBError> = key.withUnsafeBytes { keyBytes in
            value.withUnsafeBytes { valueBytes in
                Result { () throws(LMDBError) in try putRaw(database, keyBytes, valueBytes, flags: flags) }
            }
        }
        try result.get()
    }

    /// Stores the bytes in `value` under the bytes in `key` (callers' buffers, read only during
    /// the call: a key or value on the stack needs no array).
    package func putRaw<Key, Value>(
        _ database: LMDBDatabase<Key, Value>, _ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, flags: LMDBPutFlags
    ) throws(LMDBError) {
        try ensureActive("mdb_put(\(database.name))")
        var keyVal = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        var valueVal = MDB_val(mv_size: value.count, mv_data: UnsafeMutableRawPointer(mutating: value.baseAddress))
        let rc = mdb_put(handle, database.handle, &keyVal, &valueVal, flags.rawValue)
        noteMapAccess()
        if rc == MDB_MAP_FULL { hitMapFull = true }
        if rc == MDB_KEYEXIST, flags.contains(.append), !flags.contains(.noOverwrite) {
            throw LMDBError.appendOutOfOrder("mdb_put(\(database.name), MDB_APPEND)", key: key,
                                             detail: "is not greater than the last key of the database")
        }
        try LMDBError.check(rc, "mdb_put(\(database.name))")
        didWrite = true
    }

    /// Stores a run of entries at the end of `database` with `MDB_APPEND` (a bulk load: pages are
    /// filled in order, no key is searched for): the entries must come in strictly increasing
    /// order of their encoded keys (LMDB's byte order), the first greater than every key already
    /// stored.
    ///
    /// Every key is checked before anything is written, so a batch that breaks the order writes
    /// nothing.
    ///
    /// - Throws: ``LMDBError`` of kind ``LMDBError/Kind/appendOutOfOrder`` naming the database, the
    ///   entry's index and its key when a key is not greater than the one before it (or than the
    ///   database's last key); other ``LMDBError``s as ``put(_:_:_:flags:)`` (a full map is grown
    ///   and the transaction re-run by the environment).
    public func append<Key, Value>(_ database: LMDBDatabase<Key, Value>, sorted entries: [(Key.Item, Value.Item)]) throws(LMDBError) {
        try append(database, encoded: entries.map { (Key.encode($0.0), Value.encode($0.1)) })
    }

    /// ``append(_:sorted:)`` of entries already encoded by the database's codecs.
    package func append<Key, Value>(_ database: LMDBDatabase<Key, Value>, encoded entries: [([UInt8], [UInt8])]) throws(LMDBError) {
        try ensureActive("mdb_put(\(database.name), MDB_APPEND)")
        guard !entries.isEmpty else { return }
        let operation = "mdb_put(\(database.name), MDB_APPEND)"
        func compare(_ a: [UInt8], _ b: UnsafeRawBufferPointer) -> Int32 {
            a.withUnsafeBytes { a in
                var x = MDB_val(mv_size: a.count, mv_data: UnsafeMutableRawPointer(mutating: a.baseAddress))
                var y = MDB_val(mv_size: b.count, mv_data: UnsafeMutableRawPointer(mutating: b.baseAddress))
                return mdb_cmp(handle, database.handle, &x, &y)
            }
        }
        // The order first, with the database's own comparison: nothing is written unless it holds.
        for index in entries.indices.dropFirst() {
            let ordered = entries[index - 1].0.withUnsafeBytes { previous in compare(entries[index].0, previous) > 0 }
            if !ordered {
                throw entries[index].0.withUnsafeBytes {
                    LMDBError.appendOutOfOrder(operation, key: $0, detail: "(entry \(index)) is not greater than the entry before it")
                }
            }
        }
        var cursor: OpaquePointer?
        try LMDBError.check(mdb_cursor_open(handle, database.handle, &cursor), "mdb_cursor_open(\(database.name))")
        defer { mdb_cursor_close(cursor) }
        var lastKey = MDB_val(), lastValue = MDB_val()
        let rc = mdb_cursor_get(cursor, &lastKey, &lastValue, MDB_LAST)
        if rc == 0 {
            let last = try bounds.checked(lastKey, "mdb_cursor_get(\(database.name))")
            if compare(entries[0].0, last) <= 0 {
                throw entries[0].0.withUnsafeBytes {
                    LMDBError.appendOutOfOrder(operation, key: $0, detail: "(entry 0) is not greater than the last key of the database")
                }
            }
        } else if rc != MDB_NOTFOUND {
            try LMDBError.check(rc, "mdb_cursor_get(\(database.name))")
        }
        for (index, entry) in entries.enumerated() {
            let rc = entry.0.withUnsafeBytes { keyBytes in
                entry.1.withUnsafeBytes { valueBytes in
                    var keyVal = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
                    var valueVal = MDB_val(mv_size: valueBytes.count, mv_data: UnsafeMutableRawPointer(mutating: valueBytes.baseAddress))
                    return mdb_cursor_put(cursor, &keyVal, &valueVal, UInt32(MDB_APPEND))
                }
            }
            if rc == MDB_MAP_FULL { hitMapFull = true }
            if rc == MDB_KEYEXIST {
                // Checked above; LMDB disagreeing means the database changed under the cursor.
                throw entry.0.withUnsafeBytes {
                    LMDBError.appendOutOfOrder(operation, key: $0, detail: "(entry \(index)) was refused by LMDB")
                }
            }
            try LMDBError.check(rc, operation)
            didWrite = true
        }
    }

    /// Removes `key`; returns false when it was not stored. Inlinable, as ``put(_:_:_:flags:)``.
    @discardableResult @inlinable
    public func delete<Key, Value>(_ database: LMDBDatabase<Key, Value>, _ key: Key.Item) throws -> Bool {
        try deleteRaw(database, Key.encode(key))
    }

    /// Removes the key in `key`'s bytes; returns false when it was not stored.
    @usableFromInline
    package func deleteRaw<Key, Value>(_ database: LMDBDatabase<Key, Value>, _ key: [UInt8]) throws -> Bool {
        try ensureActive("mdb_del(\(database.name))")
        let rc = key.withUnsafeBytes { bytes in
            var keyVal = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            return mdb_del(handle, database.handle, &keyVal, nil)
        }
        noteMapAccess()
        if rc == MDB_NOTFOUND { return false }
        if rc == MDB_MAP_FULL { hitMapFull = true }
        try LMDBError.check(rc, "mdb_del(\(database.name))")
        didWrite = true
        return true
    }

    /// Deletes the named database `name` and every entry in it (`mdb_drop` with `del` = 1), if the
    /// environment holds one by that name; returns whether it did. For databases a store no longer
    /// opens (an older layout's tables): the handle it opens here is closed by the drop, so no
    /// other handle of this process may name the database.
    @discardableResult
    package func dropDatabase(named name: String) throws -> Bool {
        try ensureActive("mdb_dbi_open(\(name))")
        var dbi: MDB_dbi = 0
        let rc = mdb_dbi_open(handle, name, 0, &dbi)
        if rc == MDB_NOTFOUND { return false }
        try LMDBError.check(rc, "mdb_dbi_open(\(name))")
        try LMDBError.check(mdb_drop(handle, dbi, 1), "mdb_drop(\(name))")
        didWrite = true
        return true
    }

    /// Removes every entry of `database` (`mdb_drop` without deleting the database itself).
    public func removeAll<Key, Value>(_ database: LMDBDatabase<Key, Value>) throws {
        try ensureActive("mdb_drop(\(database.name))")
        // Not counted in `didWrite`: dropping an empty table may commit no new transaction, and
        // `didWrite` must never claim a write LMDB did not commit (see ``afterCommit(_:)``).
        try LMDBError.check(mdb_drop(handle, database.handle, 0), "mdb_drop(\(database.name))")
    }
}
