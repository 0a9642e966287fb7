#if canImport(CLMDBVendored)
import CLMDBVendored
#else
import CLMDB
#endif
#if canImport(Glibc)
import Glibc
typealias stat_t = Glibc.stat
#elseif canImport(Darwin)
import Darwin
typealias stat_t = Darwin.stat
#endif

/// A read transaction: a consistent snapshot of the environment, valid only inside the closure
/// of ``LMDBEnvironment/read(_:)`` (or ``LMDBEnvironment/write(_:)``, whose
/// ``WriteTransaction`` is also a `ReadTransaction`).
///
/// Do not keep a transaction beyond its closure, and do not start another transaction inside
/// one: a map resize waits for every transaction of the process, so nesting can deadlock.
/// Using a transaction after its closure returned throws an ``LMDBError``.
public class ReadTransaction {
    /// The `MDB_txn *` handle.
    let handle: OpaquePointer
    /// Cleared when the closure returns; checked by every operation.
    private(set) var isActive = true

    /// Where values may lie: inside the map, below the end of the data file and of the last used
    /// page. LMDB has no page checksums, so on a damaged file it can hand back a value running
    /// past the end of the file; touching it would kill the process with SIGBUS. Every value is
    /// checked against these bounds before anyone reads it.
    let bounds: MapBounds

    /// Map accesses (reads, cursor steps, writes) left before this transaction hands the pages
    /// it mapped back to the kernel, and how many it allows between two such releases (`Int.max`:
    /// never; see ``WriteTransaction/releaseMappedPages(every:)``).
    private var accessesBeforeRelease = Int.max, releaseInterval = Int.max

    init(handle: OpaquePointer, bounds: MapBounds) {
        self.handle = handle
        self.bounds = bounds
    }

    /// Counts one access to the map: one `mdb_get`, cursor step, put or delete (each reads a few
    /// pages of each B-tree level on its way); once ``releaseInterval`` of them were made, the
    /// mapped pages are handed back (``dropMappedPages()``).
    final func noteMapAccess() {
        accessesBeforeRelease -= 1
        guard accessesBeforeRelease <= 0 else { return }
        accessesBeforeRelease = releaseInterval
        dropMappedPages()
    }

    /// Releases the mapped pages after every `accesses` accesses to the map from now on.
    final func dropMappedPages(every accesses: Int) {
        releaseInterval = max(1, accesses)
        accessesBeforeRelease = releaseInterval
    }

    /// `madvise(MADV_DONTNEED)` on LMDB's map (see ``WriteTransaction/releaseMappedPages()``).
    final func dropMappedPages() {
        guard isActive, bounds.mapEnd > bounds.mapStart, let start = UnsafeMutableRawPointer(bitPattern: bounds.mapStart) else { return }
        _ = madvise(start, Int(bounds.mapEnd - bounds.mapStart), MADV_DONTNEED)
    }

    /// Marks the transaction finished (its handle is committed or aborted by the environment).
    func invalidate() { isActive = false }

    @usableFromInline
    func ensureActive(_ operation: @autoclosure () -> String) throws(LMDBError) {
        guard isActive else {
            throw LMDBError(
                operation: operation(), code: MDB_BAD_TXN,
                message: "transaction used after its closure returned")
        }
    }

    /// The value stored under `key`, or nil.
    ///
    /// Inlinable, as is ``forEach(_:from:direction:prefix:_:)``: specialized in the caller, a read
    /// needs no run-time lookup of the codecs' `Item` types (an unspecialized call resolved a
    /// composite key's `Item` at a process's first use, about 950,000 instructions).
    @inlinable
    public final func get<Key, Value>(_ database: LMDBDatabase<Key, Value>, _ key: Key.Item) throws -> Value.Item? {
        try ensureActive("mdb_get(\(database.name))")
        guard let bytes = try rawValue(database, Key.encode(key)) else { return nil }
        return try Value.decode(bytes)
    }

    /// The raw stored bytes for `key` (pointing into the map, valid until the transaction ends).
    @usableFromInline
    package func rawValue<Key, Value>(
        _ database: LMDBDatabase<Key, Value>, _ key: [UInt8]
    ) throws(LMDBError) -> UnsafeRawBufferPointer? {
        try ensureActive("mdb_get(\(database.name))")
        let result: Result<UnsafeRawBufferPointer?, LMDBError> = key.withUnsafeBytes { bytes in
            Result { () throws(LMDBError) in try rawValue(database, bytes) }
        }
        return try result.get()
    }

    /// The raw stored bytes for the key in `key` (a caller's buffer, read only during the call:
    /// a key encoded on the stack needs no array).
    package func rawValue<Key, Value>(
        _ database: LMDBDatabase<Key, Value>, _ key: UnsafeRawBufferPointer
    ) throws(LMDBError) -> UnsafeRawBufferPointer? {
        var value = MDB_val()
        var keyVal = MDB_val(mv_size: key.count, mv_data: UnsafeMutableRawPointer(mutating: key.baseAddress))
        let rc = mdb_get(handle, database.handle, &keyVal, &value)
        noteMapAccess()
        if rc == MDB_NOTFOUND { return nil }
        try LMDBError.check(rc, "mdb_get(\(database.name))")
        return try bounds.checked(value, "mdb_get(\(database.name))")
    }

    /// The number of entries in `database`.
    public func count<Key, Value>(_ database: LMDBDatabase<Key, Value>) throws -> Int {
        try ensureActive("mdb_stat(\(database.name))")
        var stat = MDB_stat()
        try LMDBError.check(mdb_stat(handle, database.handle, &stat), "mdb_stat(\(database.name))")
        return stat.ms_entries
    }

    /// Walks `database` with a cursor, calling `body` with each decoded entry until it returns
    /// false or the entries run out.
    ///
    /// - Parameters:
    ///   - from: the first key to visit: going forward, the first key at or after it
    ///     (`MDB_SET_RANGE`); going backward, the last key at or before it. Nil starts at the
    ///     first (forward) or last (backward) entry of the range.
    ///   - direction: ascending or descending key order.
    ///   - prefix: when given, only keys starting with these bytes are visited.
    ///   - body: receives each key and value; returns true to continue.
    ///
    /// The cursor lives only for this call, inside this transaction.
    @inlinable
    public final func forEach<Key, Value>(
        _ database: LMDBDatabase<Key, Value>,
        from start: Key.Item? = nil,
        direction: LMDBDirection = .forward,
        prefix: [UInt8]? = nil,
        _ body: (Key.Item, Value.Item) throws -> Bool
    ) throws {
        try forEachRaw(database, from: start.map(Key.encode), direction: direction, prefix: prefix) { key, value in
            try body(try Key.decode(key), try Value.decode(value))
        }
    }

    /// The cursor walk of ``forEach(_:from:direction:prefix:_:)`` over raw bytes.
    @usableFromInline
    package func forEachRaw<Key, Value>(
        _ database: LMDBDatabase<Key, Value>,
        from start: [UInt8]?,
        direction: LMDBDirection,
        prefix: [UInt8]?,
        _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) throws -> Bool
    ) throws {
        try ensureActive("mdb_cursor_open(\(database.name))")
        let cursor = try LMDBCursor(transaction: handle, database: database.handle, name: database.name, bounds: bounds)
        defer { cursor.close() }
        let prefix = prefix.flatMap { $0.isEmpty ? nil : $0 }
        let step: MDB_cursor_op
        var entry: LMDBCursor.Entry?
        switch direction {
        case .forward:
            step = MDB_NEXT
            if let seekKey = start ?? prefix, !seekKey.isEmpty {
                entry = try cursor.seek(atOrAfter: seekKey)
            } else {
                entry = try cursor.move(MDB_FIRST)
            }
        case .backward:
            step = MDB_PREV
            if let start, !start.isEmpty {
                // The last key <= start: seek >= start, step back unless it is start itself.
                if let found = try cursor.seek(atOrAfter: start) {
                    entry = found.key.elementsEqual(start) ? found : try cursor.move(MDB_PREV)
                } else {
                    entry = try cursor.move(MDB_LAST)
                }
            } else if let prefix, let after = Self.successor(of: prefix) {
                entry = try cursor.seek(atOrAfter: after) != nil ? try cursor.move(MDB_PREV) : try cursor.move(MDB_LAST)
            } else {
                entry = try cursor.move(MDB_LAST)
            }
        }
        while let current = entry {
            if let prefix, !current.key.starts(with: prefix) {
                // Outside the prefix range: skip keys before it (forward) or after it (backward).
                let keyBytes = Array(current.key)
                let beforeRange = keyBytes.lexicographicallyPrecedes(prefix)
                switch direction {
                case .forward where beforeRange, .backward where !beforeRange:
                    entry = try cursor.move(step)
                    continue
                case .forward, .backward:
                    return
                }
            }
            guard try body(current.key, current.value) else { return }
            noteMapAccess()
            entry = try cursor.move(step)
        }
    }

    /// Opens (and with `create`, creates) a named database inside this transaction.
    /// A nil name opens the main (unnamed) database, whose keys are the named databases' names.
    func openHandle(named name: String?, create: Bool) throws(LMDBError) -> MDB_dbi {
        try ensureActive("mdb_dbi_open(\(name ?? "main"))")
        var dbi: MDB_dbi = 0
        let rc = mdb_dbi_open(handle, name, create ? UInt32(MDB_CREATE) : 0, &dbi)
        if rc == MDB_MAP_FULL, let writer = self as? WriteTransaction { writer.hitMapFull = true }
        try LMDBError.check(rc, "mdb_dbi_open(\(name ?? "main"))")
        return dbi
    }

    /// The smallest byte string greater than every string starting with `prefix`, if any.
    static func successor(of prefix: [UInt8]) -> [UInt8]? {
        var bytes = prefix
        while let last = bytes.last {
            if last < 0xFF {
                bytes[bytes.count - 1] = last + 1
                return bytes
            }
            bytes.removeLast()
        }
        return nil
    }
}

/// Transactions are tied to the thread and closure that run them.
@available(*, unavailable)
extension ReadTransaction: Sendable {}

/// The part of the memory map that holds valid pages for one transaction.
///
/// `Sendable`: plain integers.
struct MapBounds: Sendable {
    /// The map's first byte.
    let mapStart: UInt
    /// One past the map's last byte.
    let mapEnd: UInt
    /// One past the last byte that is both in the data file and in a page in use.
    let validEnd: UInt
    /// Write transactions also return values from their own dirty pages, which live outside the map.
    let allowOutsideMap: Bool
    /// The data file's descriptor, for a write transaction's second look at the file's size (`-1`:
    /// none).
    var fileDescriptor: Int32 = -1

    /// Reads the bounds for a transaction of `environment` mapped at `map` (`nil`: unknown, no
    /// checks): `me_last_pgno` of the latest snapshot and the data file's size.
    static func current(environment: OpaquePointer, map: (start: UInt, end: UInt)?, write: Bool) -> MapBounds {
        guard let map else { return MapBounds(mapStart: 0, mapEnd: 0, validEnd: 0, allowOutsideMap: true, fileDescriptor: -1) }
        var info = MDB_envinfo()
        mdb_env_info(environment, &info)
        var stat = MDB_stat()
        mdb_env_stat(environment, &stat)
        var fileSize = UInt.max
        var fd: Int32 = -1
        if mdb_env_get_fd(environment, &fd) == 0 {
            var st = stat_t()
            if fstat(fd, &st) == 0 { fileSize = UInt(st.st_size) }
        }
        let used = UInt(info.me_last_pgno + 1) * UInt(stat.ms_psize)
        // A write transaction may read pages it wrote past the old last page: only the file bounds it.
        let valid = min(map.end - map.start, write ? fileSize : min(fileSize, used))
        return MapBounds(mapStart: map.start, mapEnd: map.end, validEnd: map.start + valid, allowOutsideMap: write,
                         fileDescriptor: write ? fd : -1)
    }

    /// Whether `end` lies in the data file as it is now: a write transaction with more dirty pages
    /// than LMDB keeps in memory spills some to the file, past its size when the transaction
    /// began, and reads them back through the map. Asked only of a value past ``validEnd``.
    private func isInFileNow(_ end: UInt) -> Bool {
        guard allowOutsideMap, fileDescriptor >= 0 else { return false }
        var st = stat_t()
        guard fstat(fileDescriptor, &st) == 0 else { return false }
        return end <= mapStart + min(mapEnd - mapStart, UInt(st.st_size))
    }

    /// The value as a buffer, or `MDB_CORRUPTED` when it lies (partly) outside the valid pages.
    func checked(_ value: MDB_val, _ operation: @autoclosure () -> String) throws(LMDBError) -> UnsafeRawBufferPointer {
        let address = UInt(bitPattern: value.mv_data)
        let (end, overflow) = address.addingReportingOverflow(UInt(value.mv_size))
        let insideMap = address >= mapStart && address < mapEnd
        if value.mv_size > 0, mapEnd > 0 {
            if overflow || (insideMap && end > validEnd && !isInFileNow(end)) || (!insideMap && !allowOutsideMap) || address == 0 {
                throw LMDBError(operation: operation(), code: MDB_CORRUPTED,
                                message: "a stored value lies outside the data file's pages (the file is damaged)")
            }
        }
        return UnsafeRawBufferPointer(start: value.mv_data, count: value.mv_size)
    }
}
