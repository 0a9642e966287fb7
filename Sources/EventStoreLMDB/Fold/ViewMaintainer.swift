import Foundation
import LMDB
import Projections
import ReadingEvents

/// The one fold core of the store (issue 37, item 3): every path that folds logged events into
/// views goes through it: the append pipeline and the catch-up of the active views
/// (`foldAppended`), the catch-up of a rebuild's new generation, the rebuild's fold workers and the
/// refold of one reader (``foldReader(_:through:placements:_:)``), and `verify`'s fresh fold in
/// memory (`freshFoldDigest`).
///
/// A pass folds events in log order with ``fold(_:into:)``: an event that sorts before what its
/// book has folded (a late arrival, merged after events it sorts before) marks the book, and
/// ``finish(through:views:_:)`` refolds each marked book once from its stored events, so the views
/// are those of the canonical order whatever order the log holds the events in. One maintainer is
/// one pass; the rebuild gives each fold thread its own.
///
/// Not `Sendable`: a local value of one pass on one thread (it holds the pass's marked books).
struct ViewMaintainer {
    /// The store whose log, reader index and canonical copies the pass reads.
    let store: ReadingStore
    /// The fold of one event, with the store's day-start hour.
    let projector: ReadingProjector
    /// The books late events marked in this pass.
    private var refolds = RefoldSet()

    /// A pass over `store`'s views.
    init(_ store: ReadingStore) {
        self.store = store
        projector = ReadingProjector(dayStartHour: store.dayStartHour)
    }

    /// Folds one event into `views`, after every event folded before it in this pass.
    @inline(__always)
    mutating func fold(_ envelope: EventEnvelope, into views: inout some FoldableViews) throws {
        refolds.note(try views.apply(envelope, with: projector))
    }

    /// Ends the pass: refolds each book that a late event marked from its stored events up to
    /// position `last` (read in `txn`, as their canonical copies), and returns how many books it
    /// refolded. The maintainer can then start another pass.
    @discardableResult
    mutating func finish(through last: UInt64, views: inout some ViewStore, _ txn: ReadTransaction) throws -> Int {
        let books = refolds.books
        refolds = RefoldSet()
        guard !books.isEmpty else { return 0 }
        let placements = try store.placements(txn)
        for (reader, book) in books {
            let stream = StreamKey(.book(reader: reader, book: book))
            let events = try store.log.readStream(stream, from: 1, limit: .max, in: txn)
                .filter { $0.position <= last }.map(placements.envelope(of:))
            try projector.refold(reader: reader, book: book, events: events, in: &views)
        }
        return books.count
    }

    /// Folds every event of `reader` up to position `last` into new views in memory, in log order
    /// (the reader index's positions, each record checked and decoded where it lies in the map),
    /// with the refolds its late events ask for; returns the views and the number of events.
    ///
    /// - Throws: ``EventStoreError/corruptView(detail:)`` when the reader index lists a position
    ///   the log does not hold, or an event of another reader.
    func foldReader(_ reader: ReaderID, through last: UInt64, placements: Placements,
                    _ txn: ReadTransaction) throws -> (views: SingleReaderViewStore, events: Int) {
        var positions: [UInt64] = []
        try txn.forEach(store.readerIndex, from: (reader, 0), prefix: ReaderIDKey.encode(reader)) { key, _ in
            guard key.1 <= last else { return false }
            positions.append(key.1)
            return true
        }
        var pass = ViewMaintainer(store: store, projector: projector)
        var views = SingleReaderViewStore(reader: reader)
        for position in positions {
            // Read in place: the payload is decoded where it lies, not copied into an array first.
            guard let envelope = try store.log.withEvent(at: position, in: txn, { try placements.envelope(of: $0, at: position) }) else {
                throw EventStoreError.corruptView(detail: "index.reader: reader \(reader) lists position \(position), which the log does not hold")
            }
            guard envelope.reader == reader else {
                throw EventStoreError.corruptView(
                    detail: "index.reader: reader \(reader) lists position \(position), an event of reader \(envelope.reader)")
            }
            try pass.fold(envelope, into: &views)
        }
        try pass.finish(through: last, views: &views, txn)
        return (views, positions.count)
    }

    private init(store: ReadingStore, projector: ReadingProjector) {
        self.store = store
        self.projector = projector
    }
}

/// Views that fold an event with ``ReadingProjector`` specialized for their own type: the
/// stores a ``ViewMaintainer`` folds into. Each conformance's `apply` is made in the module that
/// defines the store, so the projector's generic fold runs specialized, not through the
/// `ViewStore` witness table at every record access.
protocol FoldableViews: ViewStore {
    /// Folds one event into these views (``ReadingProjector/apply(_:to:)``).
    mutating func apply(_ envelope: EventEnvelope, with projector: ReadingProjector) throws -> ReadingProjector.Outcome
}

/// The write-back cache over the LMDB views that the append pipeline and the catch-ups fold into.
extension CachingViewStore: FoldableViews where Base == AnyViewStore {}

/// One reader's views in memory: what the rebuild's workers and the refold of a reader fold into.
extension SingleReaderViewStore: FoldableViews {}

/// Every reader's views in memory: what `verify`'s fresh fold folds into (the projector's generic
/// fold, unspecialized, as before).
extension InMemoryViewStore: FoldableViews {
    mutating func apply(_ envelope: EventEnvelope, with projector: ReadingProjector) throws -> ReadingProjector.Outcome {
        try projector.apply(envelope, to: &self)
    }
}

/// The books an apply pass found late events for, in the order found, each once.
///
/// Not `Sendable`-relevant: a local value of one fold.
struct RefoldSet {
    private(set) var books: [(ReaderID, BookID)] = []
    private var seen = Set<StreamID>()

    /// Notes an apply outcome.
    mutating func note(_ outcome: ReadingProjector.Outcome) {
        guard case .needsRefold(let reader, let book) = outcome else { return }
        if seen.insert(.book(reader: reader, book: book)).inserted { books.append((reader, book)) }
    }
}
