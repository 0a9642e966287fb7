import CLMDB

/// A write transaction, valid only inside the closure of ``LMDBEnvironment/write(_:)``.
///
/// It is committed when the closure returns and aborted when it throws. Everything a
/// `ReadTransaction` reads, it reads too, including its own uncommitted writes.
public final class WriteTransaction: ReadTransaction {
    /// Set when a put hit `MDB_MAP_FULL`: the environment then grows the map and re-runs the
    /// closure, whatever the closure did with the error.
    var hitMapFull = false

    /// Stores `value` under `key`.
    ///
    /// - Throws: ``LMDBError`` of kind ``LMDBError/Kind/keyExists`` when `flags` contain
    ///   ``LMDBPutFlags/noOverwrite`` (or ``LMDBPutFlags/append``) and the key rules are broken.
    public func put<Key, Value>(
        _ database: LMDBDatabase<Key, Value>, _ key: Key.Item, _ value: Value.Item, flags: LMDBPutFlags = []
    ) throws {
        try putRaw(database, Key.encode(key), Value.encode(value), flags: flags)
    }

    /// Stores raw bytes (used by the log and by tests that damage records on purpose).
    package func putRaw<Key, Value>(
        _ database: LMDBDatabase<Key, Value>, _ key: [UInt8], _ value: [UInt8], flags: LMDBPutFlags
    ) throws(LMDBError) {
        try ensureActive("mdb_put(\(database.name))")
        let rc = key.withUnsafeBytes { keyBytes in
            value.withUnsafeBytes { valueBytes in
                var keyVal = MDB_val(mv_size: keyBytes.count, mv_data: UnsafeMutableRawPointer(mutating: keyBytes.baseAddress))
                var valueVal = MDB_val(mv_size: valueBytes.count, mv_data: UnsafeMutableRawPointer(mutating: valueBytes.baseAddress))
                return mdb_put(handle, database.handle, &keyVal, &valueVal, flags.rawValue)
            }
        }
        if rc == MDB_MAP_FULL { hitMapFull = true }
        try LMDBError.check(rc, "mdb_put(\(database.name))")
    }

    /// Removes `key`; returns false when it was not stored.
    @discardableResult
    public func delete<Key, Value>(_ database: LMDBDatabase<Key, Value>, _ key: Key.Item) throws -> Bool {
        try ensureActive("mdb_del(\(database.name))")
        let rc = Key.encode(key).withUnsafeBytes { bytes in
            var keyVal = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            return mdb_del(handle, database.handle, &keyVal, nil)
        }
        if rc == MDB_NOTFOUND { return false }
        if rc == MDB_MAP_FULL { hitMapFull = true }
        try LMDBError.check(rc, "mdb_del(\(database.name))")
        return true
    }

    /// Removes every entry of `database` (`mdb_drop` without deleting the database itself).
    public func removeAll<Key, Value>(_ database: LMDBDatabase<Key, Value>) throws {
        try ensureActive("mdb_drop(\(database.name))")
        try LMDBError.check(mdb_drop(handle, database.handle, 0), "mdb_drop(\(database.name))")
    }
}
