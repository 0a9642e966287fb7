import ReadingEvents

/// Any ``ViewStore`` behind one concrete type, so that a fold through a ``CachingViewStore`` over a
/// store of another module runs specialized code.
///
/// The projector's fold is generic over its store. Called from another module (the LMDB store's
/// append path) with `CachingViewStore<ThatModulesStore>`, it cannot be specialized there and runs
/// through witness tables and run-time generic metadata at every record access. Wrapped as
/// `CachingViewStore<AnyViewStore>`, the fold is specialized inside this module
/// (``CachingViewStore/apply(_:with:)``); only the cache's misses and its flush reach the wrapped
/// store, through one existential call each.
///
/// Not `Sendable`: it holds an arbitrary store (one bound to a transaction, typically).
public struct AnyViewStore: ViewStore {
    /// The wrapped store.
    public private(set) var base: any ViewStore

    /// Wraps `base`.
    public init(_ base: any ViewStore) { self.base = base }

    public func record<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key) throws -> T.Record? {
        try base.record(table, reader: reader, key)
    }
    public mutating func takeRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key) throws -> T.Record? {
        try base.takeRecord(table, reader: reader, key)
    }
    public mutating func restoreRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key, _ record: consuming T.Record) throws {
        try base.restoreRecord(table, reader: reader, key, record)
    }
    public mutating func putRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, _ key: T.Key, _ record: consuming T.Record?,
                                                       replacing previous: T.Record?) throws {
        try base.putRecord(table, reader: reader, key, record, replacing: previous)
    }
    public func forEachRecord<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, from: T.Key?, through: T.Key?, reverse: Bool,
                                                  _ body: (T.Key, T.Record) throws -> Bool) throws {
        try base.forEachRecord(table, reader: reader, from: from, through: through, reverse: reverse, body)
    }
    public func records<T: ViewRecordTable>(_ table: T.Type, reader: ReaderID, from: T.Key?, through: T.Key?) throws
        -> [(key: T.Key, record: T.Record)] {
        try base.records(table, reader: reader, from: from, through: through)
    }
    public func readers() throws -> [ReaderID] { try base.readers() }
}

extension CachingViewStore where Base == AnyViewStore {
    /// Folds one event into the cached views with `projector` (``ReadingProjector/apply(_:to:)``),
    /// specialized for this concrete cache (see ``AnyViewStore``).
    @discardableResult
    public mutating func apply(_ envelope: EventEnvelope, with projector: ReadingProjector) throws -> ReadingProjector.Outcome {
        try projector.apply(envelope, to: &self)
    }

    /// ``flush()``, specialized for this concrete cache (called from another module, the generic
    /// flush sorts and hashes its keys through unspecialized code).
    public mutating func flushSpecialized() throws { try flush() }
}
