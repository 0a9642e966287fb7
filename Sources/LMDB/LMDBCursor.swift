#if canImport(CLMDBVendored)
import CLMDBVendored
#else
import CLMDB
#endif

/// An LMDB cursor, scoped to one call of ``ReadTransaction/forEach(_:from:direction:prefix:_:)``.
///
/// The bytes it returns point into the memory map and are valid only until the next cursor move
/// or the end of the transaction; callers decode (copy) them at once.
final class LMDBCursor {
    private let handle: OpaquePointer
    private let databaseName: String
    private let bounds: MapBounds

    /// An entry as raw buffers into the map.
    typealias Entry = (key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer)

    init(transaction: OpaquePointer, database: MDB_dbi, name: String, bounds: MapBounds) throws(LMDBError) {
        self.bounds = bounds
        var cursor: OpaquePointer?
        try LMDBError.check(mdb_cursor_open(transaction, database, &cursor), "mdb_cursor_open(\(name))")
        handle = cursor!
        databaseName = name
    }

    /// Closes the cursor (a cursor in a read-only transaction must be closed explicitly).
    func close() { mdb_cursor_close(handle) }

    /// Moves with `op` (no key); nil at the end.
    func move(_ op: MDB_cursor_op) throws(LMDBError) -> Entry? {
        var key = MDB_val()
        var value = MDB_val()
        return try finish(mdb_cursor_get(handle, &key, &value, op), key, value)
    }

    /// Moves to the first key at or after `start` (`MDB_SET_RANGE`); nil when there is none.
    func seek(atOrAfter start: [UInt8]) throws(LMDBError) -> Entry? {
        var value = MDB_val()
        var key = MDB_val()
        let rc = start.withUnsafeBytes { bytes in
            key = MDB_val(mv_size: bytes.count, mv_data: UnsafeMutableRawPointer(mutating: bytes.baseAddress))
            return mdb_cursor_get(handle, &key, &value, MDB_SET_RANGE)
        }
        return try finish(rc, key, value)
    }

    private func finish(_ rc: Int32, _ key: MDB_val, _ value: MDB_val) throws(LMDBError) -> Entry? {
        if rc == MDB_NOTFOUND { return nil }
        try LMDBError.check(rc, "mdb_cursor_get(\(databaseName))")
        return (try bounds.checked(key, "mdb_cursor_get(\(databaseName))"),
                try bounds.checked(value, "mdb_cursor_get(\(databaseName))"))
    }
}
