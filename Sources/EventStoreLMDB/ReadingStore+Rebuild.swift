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
    /// to the inactive generation's tables in key order (`MDB_APPEND`). Folding runs on a thread of
    /// its own (in read transactions) while the calling thread appends the readers folded before
    /// (LMDB has one write transaction at a time); a bounded queue between them holds a few
    /// readers' records, so memory does not grow with the log. Write transactions take whole
    /// readers until they have folded ``rebuildChunkSize`` events. The report's digest is hashed
    /// from the records appended (``ViewDigest``). A last commit folds what was appended meanwhile
    /// and makes the new views active; a crash (or an error) before that commit leaves the active
    /// views as they were.
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
        // is read by nobody, so committing it in parts is safe. A fold thread folds readers (in
        // read transactions) while this thread encodes and appends the ones before into the
        // shadow tables: a bounded queue between them holds a few readers' records at most.
        let queue = RebuildQueue(capacity: Self.rebuildQueueCapacity)
        let finished = RebuildFolder(store: self, last: last, queue: queue).start()
        defer {
            // Whatever ends the pass, the fold thread stops and is gone before the rebuild returns.
            queue.cancel()
            finished.wait()
        }
        var folded: UInt64 = 0
        // The digest of the new views, from the records appended; a chunk's records are hashed
        // once its transaction committed (a write may run its closure again).
        var digest = ViewDigest.Accumulator()
        // The readers this transaction took (written again if its closure runs again), and the
        // rest of the last batch taken: a transaction takes whole readers, not whole batches.
        var chunk: [ReaderRecords] = []
        var pending: ArraySlice<(views: SingleReaderViewStore, events: Int)> = []
        var done = false
        while !done {
            let (count, total) = try log.environment.write { txn -> (Int, UInt64) in
                var count = 0
                // A closure run again (after the map grew) writes the readers it already took.
                for records in chunk {
                    try generations[target].append(records, txn)
                    count += records.events
                }
                while count < Self.rebuildChunkSize, !done {
                    if pending.isEmpty {
                        guard let batch = try queue.take() else {
                            done = true
                            break
                        }
                        pending = batch.readers[...]
                    }
                    // Encoded here, not on the fold thread, which has the larger share of the work.
                    let (views, events) = pending.removeFirst()
                    var records = ViewDatabases.records(of: views)
                    records.events = events
                    chunk.append(records)
                    try generations[target].append(records, txn)
                    count += records.events
                }
                return (count, try log.lastPosition(in: txn))
            }
            for records in chunk { digest.add(records) }
            chunk.removeAll()
            folded += UInt64(count)
            progress?(folded, total)
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

    /// Readers (their records) per batch of the rebuild's queue: whole readers until a batch has
    /// folded this many events.
    static let rebuildBatchEvents = 2_048
    /// Batches the rebuild's queue holds at most (besides the one being folded and the one being
    /// written): memory holds a few readers' records, whatever the size of the log.
    static let rebuildQueueCapacity = 2

    /// The first reader in the reader index after `reader` (the first of all for nil).
    fileprivate func readerIndexed(after reader: ReaderID?, _ txn: ReadTransaction) throws -> ReaderID? {
        var found: ReaderID?
        try txn.forEach(readerIndex, from: reader.map { ($0, UInt64.max) }) { key, _ in
            if key.0 == reader { return true }
            found = key.0
            return false
        }
        return found
    }

    /// Folds every event of `reader` up to position `last` in memory, in log order (with the
    /// refolds its late events ask for), and returns the reader's views with the number of events
    /// folded.
    fileprivate func rebuildReader(_ reader: ReaderID, through last: UInt64, projector: ReadingProjector,
                                   placements: Placements, _ txn: ReadTransaction) throws -> (views: SingleReaderViewStore, events: Int) {
        var positions: [UInt64] = []
        try txn.forEach(readerIndex, from: (reader, 0), prefix: ReaderIDKey.encode(reader)) { key, _ in
            guard key.1 <= last else { return false }
            positions.append(key.1)
            return true
        }
        var views = SingleReaderViewStore(reader: reader)
        var refolds = RefoldSet()
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
        return (views, positions.count)
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

/// Readers folded by a rebuild's fold thread, in reader-ID order: their views and how many
/// events they folded.
///
/// `Sendable`: views (value types) and counts, handed from the fold thread to the writing thread.
struct RebuildBatch: Sendable {
    var readers: [(views: SingleReaderViewStore, events: Int)] = []
    var events = 0
}

/// The bounded queue between a rebuild's fold thread and the thread that writes: the fold thread
/// waits while it is full, the writer while it is empty; an error of the fold thread or the end
/// of the readers is the last thing it hands over, and the writer cancels it when it stops.
///
/// `@unchecked Sendable`: every stored property is read and written only while `condition` is
/// locked.
final class RebuildQueue: @unchecked Sendable {
    private let condition = NSCondition()
    private let capacity: Int
    private var batches: [RebuildBatch] = []
    private var end: Result<Void, any Error>?
    private var cancelled = false

    init(capacity: Int) { self.capacity = capacity }

    /// Hands `batch` to the writer, waiting while the queue is full; false when the writer stopped.
    func put(_ batch: RebuildBatch) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while batches.count >= capacity, !cancelled { condition.wait() }
        guard !cancelled else { return false }
        batches.append(batch)
        condition.broadcast()
        return true
    }

    /// The fold thread is done: every reader was handed over (`.success`) or folding one failed.
    func finish(_ result: Result<Void, any Error>) {
        condition.lock()
        defer { condition.unlock() }
        end = result
        condition.broadcast()
    }

    /// The next batch, waiting while there is none; nil after the last one; throws the fold
    /// thread's error.
    func take() throws -> RebuildBatch? {
        condition.lock()
        defer { condition.unlock() }
        while batches.isEmpty, end == nil { condition.wait() }
        if !batches.isEmpty {
            let batch = batches.removeFirst()
            condition.broadcast()
            return batch
        }
        try end?.get()
        return nil
    }

    /// The writer stopped: the fold thread stops at its next batch.
    func cancel() {
        condition.lock()
        defer { condition.unlock() }
        cancelled = true
        condition.broadcast()
    }

    /// Whether the writer stopped.
    var isCancelled: Bool {
        condition.lock()
        defer { condition.unlock() }
        return cancelled
    }
}

/// A rebuild's fold thread: reads the readers of the reader index in ID order and folds each in
/// memory (the writer encodes its records), in read transactions of whole readers (at least
/// ``ReadingStore/rebuildBatchEvents`` events each), and hands them to the writer through the queue.
/// It never waits for the queue inside a read transaction (a map resize of the writer waits for
/// every transaction of the process to end).
///
/// `Sendable`: the store, a position and the queue, all `Sendable`.
struct RebuildFolder: Sendable {
    let store: ReadingStore
    let last: UInt64
    let queue: RebuildQueue

    /// Starts the thread; the returned semaphore is signalled when it has ended.
    func start() -> DispatchSemaphore {
        let ended = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            queue.finish(Result { try run() })
            ended.signal()
        }
        thread.name = "rebuild fold"
        thread.start()
        return ended
    }

    /// Folds every reader, batch by batch, until the last one or until the writer stops. Never
    /// inlined: `Scripts/rebuild-instructions.sh` counts the fold thread's instructions between
    /// entry to and exit from this function (callgrind collects per thread).
    @inline(never)
    func run() throws {
        let projector = ReadingProjector(dayStartHour: store.dayStartHour)
        var reader: ReaderID?
        var more = true
        while more, !queue.isCancelled {
            var batch = RebuildBatch()
            try store.log.environment.read { txn in
                let placements = try store.placements(txn)
                while batch.events < ReadingStore.rebuildBatchEvents {
                    guard let next = try store.readerIndexed(after: reader, txn) else {
                        more = false
                        return
                    }
                    let folded = try store.rebuildReader(next, through: last, projector: projector, placements: placements, txn)
                    reader = next
                    // A reader with no events up to `last` (appended during the pass) has no records.
                    guard folded.events > 0 else { continue }
                    batch.readers.append(folded)
                    batch.events += folded.events
                }
            }
            if !batch.readers.isEmpty, !queue.put(batch) { return }
        }
    }
}
