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
    /// The names of the persisted views, for ``rebuild(view:progress:)``.
    public static let viewNames = ViewDatabases.tableNames

    /// Events folded per write transaction during a rebuild.
    public static let rebuildChunkSize = 20_000

    /// Drops every view and folds the whole log again.
    ///
    /// The new views are written into the inactive generation in chunks of short write
    /// transactions, then one commit folds what was appended meanwhile and makes them active. A
    /// crash (or an error) before that commit leaves the active views as they were.
    ///
    /// - Parameter progress: called after each chunk with (events folded, events in the log).
    /// - Parameter view: rebuild only this view (one of ``viewNames``); the others stay as they are.
    ///   All views are folded into the inactive generation either way, and the chosen one is
    ///   copied into the active generation in the final commit.
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
        let target = try log.environment.write { txn -> Int in
            // Catch the active views up first: events appended without a fold get their reader-index
            // entries there, once, so the rebuild loop below only folds.
            try catchUpAll(txn)
            let target = 1 - (try activeGeneration(txn))
            for (_, table) in generations[target].all { try txn.removeAll(table) }
            try setCheckpoint(txn, generation: target, 0)
            return target
        }
        var folded: UInt64 = 0
        while true {
            let (count, total) = try log.environment.write { txn -> (Int, UInt64) in
                let count = try fold(into: target, txn, limit: Self.rebuildChunkSize)
                return (count, try log.lastPosition(in: txn))
            }
            folded += UInt64(count)
            progress?(folded, total)
            if count < Self.rebuildChunkSize { break }
        }
        try log.environment.write { txn in
            folded += UInt64(try fold(into: target, txn, limit: .max))
            let old = try activeGeneration(txn)
            if let view {
                // Copy the one rebuilt table into the active generation, then clear the shadow.
                let source = generations[target].all.first { $0.name == view }!.table
                let destination = generations[old].all.first { $0.name == view }!.table
                try txn.removeAll(destination)
                try txn.forEach(source) { key, value in
                    try txn.put(destination, key, value)
                    return true
                }
                try catchUpAll(txn)
                for (_, table) in generations[target].all { try txn.removeAll(table) }
                try setCheckpoint(txn, generation: target, 0)
                return
            }
            try txn.put(viewMeta, "generation", [UInt8(target)])
            for (_, table) in generations[old].all { try txn.removeAll(table) }
            try setCheckpoint(txn, generation: old, 0)
        }
        let elapsed = started.duration(to: clock.now)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return RebuildReport(events: folded, seconds: seconds, digest: try viewDigest())
    }

    /// Folds up to `limit` events after generation `target`'s checkpoint into its tables. Unlike
    /// ``foldAppended(_:_:)`` it keeps one write-back cache across many log reads (a whole chunk)
    /// and writes no reader index (the active fold already did).
    private func fold(into target: Int, _ txn: WriteTransaction, limit: Int) throws -> Int {
        let from = try checkpoint(txn, generation: target)
        let last = try log.lastPosition(in: txn)
        guard last > from else { return 0 }
        // Fold through a write-back cache: each touched record is read and written once per chunk.
        var views = CachingViewStore(base: LMDBViewStore(txn: txn, tables: generations[target]))
        let projector = ReadingProjector(dayStartHour: dayStartHour)
        var count = 0
        var position = from
        var refolds = RefoldSet()
        while count < limit, position < last {
            let records = try log.events(from: position + 1, limit: min(EventLog.readChunkSize, limit - count), in: txn)
            guard !records.isEmpty else { break }
            for record in records { refolds.note(try projector.apply(try Self.envelope(of: record), to: &views)) }
            position = records.last!.position
            count += records.count
        }
        // Events that arrived late (merged after events they sort before) refold their books,
        // from the events folded so far.
        try refold(refolds, through: position, projector: projector, views: &views, txn)
        try views.flush()
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
        try log.forEachEvent(from: 1) { record in
            if let last, record.position > last { return false }
            refolds.note(try projector.apply(try Self.envelope(of: record), to: &views))
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
