import ReadingEvents

/// A write-back cache in front of another ``ViewStore``: point reads are served from memory after
/// the first, writes stay in memory until ``flush()``. Folding a chunk of events through it reads
/// and writes each touched record once per chunk instead of once per event, which is what makes
/// rebuilds and bulk appends fast. Tables the fold scans by ranges (``ViewRecordTable/isCached``
/// false) and range reads go to the base store directly.
///
/// It has no code of its own per table: every table's records are ``RecordSlots`` keyed by
/// reader and key, with dirty marks, and for a table written in parts
/// (``ViewRecordTable/isWrittenInParts``) each record as it was read from the base store, so that
/// the flush tells the base what changed (``ViewStore/putRecord(_:reader:_:_:replacing:)``).
///
/// `Sendable` exactly when its base is (the conditional conformance below).
public struct CachingViewStore<Base: ViewStore>: ViewStore {
    /// The store underneath.
    public private(set) var base: Base
    /// The cached records: a slot with no record is a record known to be absent.
    private var tables = RecordTables()

    /// Wraps `base`.
    public init(base: Base) { self.base = base }

    /// Writes every changed record to the base store, table by table in key order, and empties
    /// the cache (keeping its tables' storage for the next records).
    public mutating func flush() throws {
        try withUnsafeMutablePointer(to: &self) { cache in
            var flush = Flush(cache: cache)
            for kind in ViewRecordKind.allCases { try kind.visit(&flush) }
        }
    }

    /// Flushes one table at a time (``ViewRecordKind/visit(_:)``), through a pointer to the cache
    /// (a copy of the cache would share its base store, whose first write would then copy it).
    private struct Flush: ViewRecordTableVisitor {
        let cache: UnsafeMutablePointer<CachingViewStore>
        mutating func visit<T: ViewRecordTable>(_ table: T.Type) throws { try cache.pointee.flush(table) }
    }

    private mutating func flush<T: ViewRecordTable>(_ table: T.Type) throws {
        guard tables.slots(table, keyedBy: ReaderScopedKey<T.Key>.self) != nil else { return }
        let box = tables.box(table, keyedBy: ReaderScopedKey<T.Key>.self)
        precondition(!box.slots.isTaken, "a record taken with takeRecord was not given back")
        for slot in box.slots.dirtySlots() {
            let key = box.slots.key(of: slot)
            try base.putRecord(table, reader: key.reader, key.key, box.slots[slot], replacing: box.slots.loaded[slot])
        }
        box.slots.removeAll()
    }

    public func record<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key) throws -> T.Record? {
        guard T.isCached else { return try base.record(table, reader: reader, key) }
        if let box = tables.slots(table, keyedBy: ReaderScopedKey<T.Key>.self),
           let slot = box.slots.slot(of: ReaderScopedKey(reader: reader, key: key)) {
            precondition(box.slots.taken != slot, "\(key) is taken: put it back before reading it")
            return box.slots[slot]
        }
        return try base.record(table, reader: reader, key)
    }

    /// Hands the record over and drops the cache's reference until it comes back (see
    /// ``ViewStore/takeRecord(_:reader:_:)``), so the fold changes it in place.
    public mutating func takeRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key) throws -> T.Record? {
        guard T.isCached else { return try base.takeRecord(table, reader: reader, key) }
        let scoped = ReaderScopedKey(reader: reader, key: key)
        if let box = tables.slots(table, keyedBy: ReaderScopedKey<T.Key>.self), let slot = box.slots.slot(of: scoped) {
            precondition(box.slots.taken != slot, "\(key) is taken already")
            return tables.box(table, keyedBy: ReaderScopedKey<T.Key>.self).slots.take(slot: slot)
        }
        let record = try base.record(table, reader: reader, key)
        let box = tables.box(table, keyedBy: ReaderScopedKey<T.Key>.self)
        let slot = box.slots.makeSlot(scoped)
        guard let record else { return nil }
        if T.isWrittenInParts { box.slots.loaded[slot] = record }
        box.slots.set(slot: slot, record)
        return box.slots.take(slot: slot)
    }
    /// Takes back an unchanged record: cached again, and written at the flush only if it was
    /// changed before it was taken.
    public mutating func restoreRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key, _ record: consuming T.Record) throws {
        guard T.isCached else { return try base.restoreRecord(table, reader: reader, key, record) }
        tables.box(table, keyedBy: ReaderScopedKey<T.Key>.self).slots.set(ReaderScopedKey(reader: reader, key: key), record)
    }
    public mutating func putRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key, _ record: consuming T.Record?,
                                                       replacing previous: T.Record?) throws {
        guard T.isCached else { return try base.putRecord(table, reader: reader, key, record, replacing: previous) }
        let scoped = ReaderScopedKey(reader: reader, key: key)
        let box = tables.box(table, keyedBy: ReaderScopedKey<T.Key>.self)
        let slot = box.slots.set(scoped, record) ?? box.slots.makeSlot(scoped)
        box.slots.markDirty(slot)
    }
    public func forEachRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, from: T.Key?, through: T.Key?, reverse: Bool,
                                                  _ body: (T.Key, T.Record) throws -> Bool) throws {
        precondition(tables.slots(table, keyedBy: ReaderScopedKey<T.Key>.self)?.slots.hasDirty != true, "flush before listing")
        try base.forEachRecord(table, reader: reader, from: from, through: through, reverse: reverse, body)
    }
    public func records<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, from: T.Key?, through: T.Key?) throws
        -> [(key: T.Key, record: T.Record)] {
        precondition(tables.slots(table, keyedBy: ReaderScopedKey<T.Key>.self)?.slots.hasDirty != true, "flush before listing")
        return try base.records(table, reader: reader, from: from, through: through)
    }
    public func readers() throws -> [ReaderID] {
        precondition(tables.slots(ViewRecords.Readers.self, keyedBy: ReaderScopedKey<ReaderRecordKey>.self)?.slots.hasDirty != true,
                     "flush before listing")
        return try base.readers()
    }
}

/// `Sendable` when its base store is: the cached records are values (``RecordTables`` copies its
/// boxes on write).
extension CachingViewStore: Sendable where Base: Sendable {}
