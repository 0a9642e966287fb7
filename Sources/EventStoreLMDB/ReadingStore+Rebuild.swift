import Foundation
import LMDB
import Projections
import ReadingEvents

/// What a rebuild did.
///
/// `Sendable`: plain values.
public struct RebuildReport: Sendable, Hashable {
    /// Events folded.
    public var events: UInt64
    /// Wall-clock seconds.
    public var seconds: Double
    /// Events per second.
    public var eventsPerSecond: Double { seconds > 0 ? Double(events) / seconds : 0 }
    /// The digest of the rebuilt views (see ``ReadingStore/viewDigest()``).
    public var digest: String
}

extension ReadingStore {
    /// The names of the persisted views, for ``rebuild(view:progress:)``: ``ViewTable/views``.
    public static var viewNames: [String] { ViewTable.views }

    /// Events folded per write transaction during a rebuild, at least: a transaction takes whole
    /// readers until it has folded this many events.
    public static let rebuildChunkSize = 20_000

    /// Drops every view and folds the whole log again.
    ///
    /// The rebuild makes one pass over the log, reader by reader (in reader-ID order, through the
    /// reader index): each reader's events are folded in memory, in log order and by the same
    /// ``ReadingProjector`` rules as every other fold, and the reader's records are then appended
    /// to the inactive generation's tables in key order (`MDB_APPEND`). Memory holds one reader's
    /// views at a time. Write transactions take whole readers until they have folded
    /// ``rebuildChunkSize`` events. A last commit folds what was appended meanwhile and makes the
    /// new views active; a crash (or an error) before that commit leaves the active views as they
    /// were.
    ///
    /// - Parameter progress: called after each write transaction of the pass with (events folded,
    ///   events in the log), at least once.
    /// - Parameter view: rebuild only this view (one of ``viewNames``, ``ViewTable/views``); the
    ///   others stay as they are. All views are folded into the inactive generation either way,
    ///   and every table of the chosen one (``ViewTable/tables(of:)``: a book view's six) is copied
    ///   into the active generation in the final commit.
    /// - Throws: ``EventStoreError/rebuildInProgress(path:)`` when another rebuild of this store
    ///   runs, in this or another process (the two would fold into the same shadow generation).
    public func rebuild(view: String? = nil, progress: ((UInt64, UInt64) -> Void)? = nil) throws -> RebuildReport {
        if let view, !Self.viewNames.contains(view) {
            throw EventStoreError.invalidArgument(field: "view", detail: "\"\(view)\" is not a view; views are \(Self.viewNames.joined(separator: ", "))")
        }
        guard let report = try log.environment.withRebuildLock({ try rebuildHoldingLock(view: view, progress: progress) }) else {
            throw EventStoreError.rebuildInProgress(path: log.directory.path)
        }
        return report
    }

    private func rebuildHoldingLock(view: String?, progress: ((UInt64, UInt64) -> Void)?) throws -> RebuildReport {
        let clock = ContinuousClock()
        let started = clock.now
        let (target, last) = try log.environment.write { txn -> (Int, UInt64) in
            // Catch the active views up first: events appended without a fold get their reader-index
            // entries there, once, so the pass below finds every event through the index.
            try catchUpAll(txn)
            let last = try log.lastPosition(in: txn)
            try ensureReaderIndexCovers(last, txn)
            let target = 1 - (try activeGeneration(txn))
            for (_, database) in generations[target].all { try txn.removeAll(database) }
            // The shadow generation's checkpoint stays 0 until the pass has written every reader.
            try setCheckpoint(txn, generation: target, 0)
            return (target, last)
        }
        // The pass: readers in ID order, whole readers per write transaction. The shadow generation
        // is read by nobody, so committing it in parts is safe.
        let projector = ReadingProjector(dayStartHour: dayStartHour)
        var folded: UInt64 = 0
        var previous: ReaderID?
        // The digest of the new views, hashed reader by reader while each is in memory; a chunk's
        // part is kept only once its transaction committed (a write may run its closure again).
        var digest = ViewDigest.Accumulator()
        while true {
            let (count, lastReader, finished, total, chunkDigest) = try log.environment.write {
                txn -> (Int, ReaderID?, Bool, UInt64, ViewDigest.Accumulator) in
                var count = 0
                var reader = previous
                var chunkDigest = digest
                while count < Self.rebuildChunkSize {
                    guard let next = try readerIndexed(after: reader, txn) else {
                        return (count, reader, true, try log.lastPosition(in: txn), chunkDigest)
                    }
                    count += try rebuildReader(next, through: last, into: generations[target], projector: projector,
                                               digest: &chunkDigest, txn)
                    reader = next
                }
                return (count, reader, false, try log.lastPosition(in: txn), chunkDigest)
            }
            folded += UInt64(count)
            digest = chunkDigest
            previous = lastReader
            progress?(folded, total)
            if finished { break }
        }
        guard folded == last else {
            throw EventStoreError.corruptView(
                detail: "index.reader: the rebuild found \(folded) events through the reader index, but the log holds \(last)")
        }
        let tail = try log.environment.write { txn -> UInt64 in
            // Fold (and index) in the active views what other writers appended during the pass, so
            // both generations end at the same position and nothing is folded twice.
            try catchUpAll(txn)
            try setCheckpoint(txn, generation: target, last)
            let tail = UInt64(try fold(into: target, txn, limit: .max))
            let old = try activeGeneration(txn)
            // This transaction replaces active views without the view memo: its commit
            // empties the memo.
            viewMemo.session(txn, generation: old).invalidate()
            if let view {
                // Copy every table of the rebuilt view into the active generation, then clear the shadow.
                for table in ViewTable.tables(of: view) {
                    let source = generations[target][table], destination = generations[old][table]
                    try txn.removeAll(destination)
                    try txn.forEach(source) { key, value in
                        try txn.put(destination, key, value)
                        return true
                    }
                }
                for (_, database) in generations[target].all { try txn.removeAll(database) }
                try setCheckpoint(txn, generation: target, 0)
                return tail
            }
            try txn.put(viewMeta, "generation", [UInt8(target)])
            for (_, database) in generations[old].all { try txn.removeAll(database) }
            try setCheckpoint(txn, generation: old, 0)
            return tail
        }
        folded += tail
        // The views now active are exactly those the pass hashed, unless events were folded after
        // it or only one table was copied into the old views: then they are read back and hashed.
        let viewsDigest = view == nil && tail == 0 ? digest.finalize() : try viewDigest()
        let elapsed = started.duration(to: clock.now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return RebuildReport(events: folded, seconds: seconds, digest: viewsDigest)
    }

    /// The first reader in the reader index after `reader` (the first of all for nil).
    private func readerIndexed(after reader: ReaderID?, _ txn: ReadTransaction) throws -> ReaderID? {
        var found: ReaderID?
        try txn.forEach(readerIndex, from: reader.map { ($0, UInt64.max) }) { key, _ in
            if key.0 == reader { return true }
            found = key.0
            return false
        }
        return found
    }

    /// Folds every event of `reader` up to position `last` in memory, in log order (with the
    /// refolds its late events ask for), appends the reader's records to `tables` and adds them to
    /// `digest`. Returns how many events it folded.
    private func rebuildReader(_ reader: ReaderID, through last: UInt64, into tables: ViewDatabases,
                               projector: ReadingProjector, digest: inout ViewDigest.Accumulator,
                               _ txn: WriteTransaction) throws -> Int {
        var positions: [UInt64] = []
        try txn.forEach(readerIndex, from: (reader, 0), prefix: ReaderIDKey.encode(reader)) { key, _ in
            guard key.1 <= last else { return false }
            positions.append(key.1)
            return true
        }
        guard !positions.isEmpty else { return 0 }
        var views = SingleReaderViewStore(reader: reader)
        var refolds = RefoldSet()
        let placements = try placements(txn)
        for position in positions {
            guard let record = try log.event(at: position, in: txn) else {
                throw EventStoreError.corruptView(detail: "index.reader: reader \(reader) lists position \(position), which the log does not hold")
            }
            let envelope = try placements.envelope(of: record)
            guard envelope.reader == reader else {
                throw EventStoreError.corruptView(
                    detail: "index.reader: reader \(reader) lists position \(position), an event of reader \(envelope.reader)")
            }
            refolds.note(try views.apply(envelope, with: projector))
        }
        try refold(refolds, through: last, projector: projector, views: &views, txn)
        try tables.append(views, txn)
        try digest.add(reader: reader, of: views)
        return positions.count
    }

    /// Makes sure the reader index lists every event up to `last` (every fold writes it, but an
    /// index lost to damage would make the pass skip events): when it has fewer entries, the
    /// missing ones are written from the log, inside `txn`.
    private func ensureReaderIndexCovers(_ last: UInt64, _ txn: WriteTransaction) throws {
        guard try txn.count(readerIndex) < Int(last) else { return }
        var position: UInt64 = 0
        while position < last {
            let records = try log.events(from: position + 1, limit: EventLog.readChunkSize, in: txn)
            guard !records.isEmpty else { break }
            for record in records { try txn.put(readerIndex, (try Self.envelope(of: record).reader, record.position), []) }
            position = records.last!.position
        }
    }

    /// Folds up to `limit` events after generation `target`'s checkpoint into its tables. Unlike
    /// ``foldAppended(_:_:)`` it keeps one write-back cache across many log reads (a whole chunk)
    /// and writes no reader index (the active fold already did).
    private func fold(into target: Int, _ txn: WriteTransaction, limit: Int) throws -> Int {
        let from = try checkpoint(txn, generation: target)
        let last = try log.lastPosition(in: txn)
        guard last > from else { return 0 }
        // Fold through a write-back cache: each touched record is read and written once per chunk.
        var views = CachingViewStore(base: AnyViewStore(LMDBViewStore(txn: txn, tables: generations[target])))
        let projector = ReadingProjector(dayStartHour: dayStartHour)
        var count = 0
        var position = from
        var refolds = RefoldSet()
        let placements = try placements(txn)
        while count < limit, position < last {
            let records = try log.events(from: position + 1, limit: min(EventLog.readChunkSize, limit - count), in: txn)
            guard !records.isEmpty else { break }
            for record in records { refolds.note(try views.apply(try placements.envelope(of: record), with: projector)) }
            position = records.last!.position
            count += records.count
        }
        // Events that arrived late (merged after events they sort before) refold their books,
        // from the events folded so far.
        try refold(refolds, through: position, projector: projector, views: &views, txn)
        try views.flushSpecialized()
        try setCheckpoint(txn, generation: target, position)
        return count
    }

    /// The digest of the active views (see ``ViewDigest``): equal digests mean identical views.
    public func viewDigest() throws -> String {
        try withViews { views in try ViewDigest.of(views) }
    }

    /// Folds the log in memory, without writing anything, and returns the digest of the views
    /// it gives: `verify` compares it with ``viewDigest()``.
    ///
    /// - Parameter last: fold only the events up to this position (the views' checkpoint, to
    ///   check views that lag the log); `nil` folds every event.
    public func freshFoldDigest(through last: UInt64? = nil, progress: ((UInt64) -> Void)? = nil) throws -> String {
        var views = InMemoryViewStore()
        let projector = ReadingProjector(dayStartHour: dayStartHour)
        var count: UInt64 = 0
        var refolds = RefoldSet()
        var folded: UInt64 = 0
        let placements = try log.environment.read { txn in try self.placements(txn) }
        try log.forEachEvent(from: 1) { record in
            if let last, record.position > last { return false }
            refolds.note(try projector.apply(try placements.envelope(of: record), to: &views))
            folded = record.position
            count += 1
            if count % 100_000 == 0 { progress?(count) }
            return true
        }
        let through = folded
        try log.environment.read { txn in
            try refold(refolds, through: through, projector: projector, views: &views, txn)
        }
        return try ViewDigest.of(views)
    }
}
