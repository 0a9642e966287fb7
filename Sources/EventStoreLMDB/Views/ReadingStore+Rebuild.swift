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

    /// The fold workers a rebuild runs when none are named: the processor cores this process may
    /// use (`ProcessInfo.activeProcessorCount`), within ``rebuildJobsRange``.
    public static var defaultRebuildJobs: Int {
        min(max(ProcessInfo.processInfo.activeProcessorCount, rebuildJobsRange.lowerBound), rebuildJobsRange.upperBound)
    }

    /// The numbers of fold workers ``rebuild(view:jobs:progress:)`` accepts.
    public static let rebuildJobsRange = 1...256

    /// Drops every view and folds the whole log again, with ``defaultRebuildJobs`` fold workers:
    /// ``rebuild(view:jobs:progress:)``.
    ///
    /// - Parameter progress: called after each write transaction of the pass with (events folded,
    ///   events in the log), at least once.
    /// - Parameter view: rebuild only this view (one of ``viewNames``, ``ViewTable/views``); the
    ///   others stay as they are.
    /// - Throws: ``EventStoreError/rebuildInProgress(path:)`` when another rebuild of this store
    ///   runs, in this or another process.
    public func rebuild(view: String? = nil, progress: ((UInt64, UInt64) -> Void)? = nil) throws -> RebuildReport {
        try rebuild(view: view, jobs: Self.defaultRebuildJobs, progress: progress)
    }

    /// Drops every view and folds the whole log again, folding readers on `jobs` threads at once.
    ///
    /// The rebuild makes one pass over the log, reader by reader (in reader-ID order, through the
    /// reader index): each reader's events are folded in memory, in log order and by the same
    /// ``ReadingProjector`` rules as every other fold, and the reader's records are then appended
    /// to the inactive generation's tables in key order (`MDB_APPEND`).
    ///
    /// Readers are independent, so `jobs` fold workers fold different readers at once, each in
    /// read transactions of its own, while the calling thread appends the readers folded before
    /// (LMDB has one write transaction at a time). Workers take the next reader in ID order and
    /// hand each folded reader to the writer through a bounded reorder window, which the writer
    /// empties in reader-ID order: the appends stay in key order, and the views and the digest are
    /// those of a one-job rebuild, byte for byte. The window holds at most
    /// ``rebuildWindowPerJob`` × `jobs` readers (being folded, or folded and not yet written), so
    /// memory does not grow with the log. With one job the writer encodes each reader's records;
    /// with more, the workers do. Write transactions take whole readers until they have folded
    /// ``rebuildChunkSize`` events. The report's digest is hashed from the records appended
    /// (``ViewDigest``). A last commit folds what was appended meanwhile and makes the new views
    /// active; a crash (or an error, of the writer or of any worker) before that commit leaves the
    /// active views as they were. When several readers fail to fold, the error is that of the
    /// first of them in reader-ID order, as with one job.
    ///
    /// - Parameter view: rebuild only this view (one of ``viewNames``, ``ViewTable/views``); the
    ///   others stay as they are. All views are folded into the inactive generation either way,
    ///   and every table of the chosen one (``ViewTable/tables(of:)``: a book view's six) is copied
    ///   into the active generation in the final commit.
    /// - Parameter jobs: the fold workers, in ``rebuildJobsRange`` (`replay rebuild --jobs`);
    ///   ``rebuild(view:progress:)`` runs ``defaultRebuildJobs``.
    /// - Parameter progress: called after each write transaction of the pass with (events folded,
    ///   events in the log), at least once.
    /// - Throws: ``EventStoreError/invalidArgument(field:detail:)`` for a view that is not one or
    ///   `jobs` outside ``rebuildJobsRange`` (nothing is written);
    ///   ``EventStoreError/rebuildInProgress(path:)`` when another rebuild of this store
    ///   runs, in this or another process (the two would fold into the same shadow generation).
    public func rebuild(view: String? = nil, jobs: Int, progress: ((UInt64, UInt64) -> Void)? = nil) throws -> RebuildReport {
        if let view, !Self.viewNames.contains(view) {
            throw EventStoreError.invalidArgument(field: "view", detail: "\"\(view)\" is not a view; views are \(Self.viewNames.joined(separator: ", "))")
        }
        guard Self.rebuildJobsRange.contains(jobs) else {
            throw EventStoreError.invalidArgument(
                field: "jobs",
                detail: "\(jobs) fold workers; a rebuild runs \(Self.rebuildJobsRange.lowerBound) ... \(Self.rebuildJobsRange.upperBound)")
        }
        guard let report = try log.environment.withRebuildLock({ try rebuildHoldingLock(view: view, jobs: jobs, progress: progress) }) else {
            throw EventStoreError.rebuildInProgress(path: log.directory.path)
        }
        return report
    }

    private func rebuildHoldingLock(view: String?, jobs: Int, progress: ((UInt64, UInt64) -> Void)?) throws -> RebuildReport {
        let clock = ContinuousClock()
        let started = clock.now
        let (target, last) = try log.environment.write { txn -> (Int, UInt64) in
            // Catch the active views up first: events appended without a fold get their reader-index
            // entries there, once, so the pass below finds every event through the index.
            try catchUpAll(txn)
            let last = try log.lastPosition(in: txn)
            try ensureReaderIndexCovers(last, txn)
            let target = 1 - (try activeGeneration(txn))
            try generations[target].removeAll(txn)
            // The shadow generation's checkpoint stays 0 until the pass has written every reader.
            try setCheckpoint(txn, generation: target, 0)
            return (target, last)
        }
        // The pass: readers in ID order, whole readers per write transaction. The shadow generation
        // is read by nobody, so committing it in parts is safe. Fold workers fold readers (in read
        // transactions) while this thread appends the ones before into the shadow tables, in
        // reader-ID order: a bounded reorder window between them holds a few readers per worker.
        let window = RebuildWindow(capacity: Self.rebuildWindowPerJob * jobs)
        let workers = (0..<jobs).map { _ in
            RebuildFolder(store: self, last: last, window: window, encodes: jobs > 1).start()
        }
        defer {
            // Whatever ends the pass, the workers stop and are gone before the rebuild returns.
            window.cancel()
            for finished in workers { finished.wait() }
        }
        var folded: UInt64 = 0
        // The digest of the new views, from the records appended; a chunk's records are hashed
        // once its transaction committed (a write may run its closure again).
        var digest = ViewDigest.Accumulator()
        // The readers this transaction took (written again if its closure runs again).
        var chunk: [ReaderRecords] = []
        var done = false
        while !done {
            let (count, total) = try log.environment.write { txn -> (Int, UInt64) in
                var count = 0
                // A closure run again (after the map grew) writes the readers it already took.
                for records in chunk {
                    try generations[target].append(records, txn)
                    count += records.events
                }
                while count < Self.rebuildChunkSize {
                    guard let next = try window.take() else {
                        done = true
                        break
                    }
                    let records: ReaderRecords
                    switch next {
                    case .records(let encoded):
                        records = encoded
                    case .views(let views, let events):
                        // One job: encoded here, not on the fold thread, which has the larger share.
                        var encoded = ViewDatabases.records(of: views)
                        encoded.events = events
                        records = encoded
                    }
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
                    let destination = generations[old].database
                    try generations[old][table].removeAll(txn)
                    try generations[target][table].forEachStored(txn) { key, value in
                        try txn.putRaw(destination, Array(key), Array(value), flags: [])
                        return true
                    }
                }
                try generations[target].removeAll(txn)
                try setCheckpoint(txn, generation: target, 0)
                return tail
            }
            try txn.put(viewMeta, "generation", [UInt8(target)])
            try generations[old].removeAll(txn)
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

    /// Events a rebuild's fold worker folds per read transaction, at least (whole readers): it
    /// ends a transaction sooner only when the reorder window is full, since it never waits inside
    /// one.
    static let rebuildBatchEvents = 2_048
    /// Readers the rebuild's reorder window holds per fold worker, at most: taken by a worker and
    /// not yet by the writer (being folded, or folded and waiting for the readers before them).
    /// Memory holds a few readers' records per worker, whatever the size of the log.
    public static let rebuildWindowPerJob = 4

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
        var maintainer = ViewMaintainer(self)
        var count = 0
        var position = from
        let placements = try placements(txn)
        while count < limit, position < last {
            let records = try log.events(from: position + 1, limit: min(EventLog.readChunkSize, limit - count), in: txn)
            guard !records.isEmpty else { break }
            for record in records { try maintainer.fold(try placements.envelope(of: record), into: &views) }
            position = records.last!.position
            count += records.count
        }
        // Events that arrived late (merged after events they sort before) refold their books,
        // from the events folded so far.
        try maintainer.finish(through: position, views: &views, txn)
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
        var maintainer = ViewMaintainer(self)
        var count: UInt64 = 0
        var folded: UInt64 = 0
        let placements = try log.environment.read { txn in try self.placements(txn) }
        try log.forEachEvent(from: 1) { record in
            if let last, record.position > last { return false }
            try maintainer.fold(try placements.envelope(of: record), into: &views)
            folded = record.position
            count += 1
            if count % 100_000 == 0 { progress?(count) }
            return true
        }
        let through = folded
        try log.environment.read { txn in
            try maintainer.finish(through: through, views: &views, txn)
        }
        return try ViewDigest.of(views)
    }
}

/// A reader folded by a rebuild's fold worker, as the writer takes it: its views (one job: the
/// writer encodes them) or its records (more jobs: the worker encoded them).
///
/// `Sendable`: values (views and byte arrays), handed from a worker thread to the writing thread.
enum RebuildFolded: Sendable {
    /// The reader's views and the events folded into them.
    case views(SingleReaderViewStore, events: Int)
    /// The reader's records, with the events folded (``ReaderRecords/events``).
    case records(ReaderRecords)
}

/// The bounded reorder window between a rebuild's fold workers and the thread that writes.
///
/// Workers claim readers one at a time in reader-ID order (each claim gets the next sequence
/// number) and deliver each folded reader under its number, in whatever order they finish; the
/// writer takes them by number, so it appends in reader-ID order. A worker may claim only while
/// fewer than `capacity` readers are claimed and not yet taken, and waits for room outside its
/// read transactions. A failure is delivered under the number of the reader it belongs to (or
/// the next number, for one of no reader), stops further claims, and is thrown by ``take()``
/// when the writer reaches it: the writer throws the first failure in reader-ID order, as one
/// worker would. The writer cancels the window when it stops, whatever the reason.
///
/// `@unchecked Sendable`: every stored property is read and written only while `condition` is
/// locked.
final class RebuildWindow: @unchecked Sendable {
    /// What a claim gives a worker.
    enum Claim {
        /// Fold this reader and deliver it under `number`.
        case reader(ReaderID, number: Int)
        /// The window is full: end the read transaction and wait for room.
        case full
        /// No more readers (all claimed, a failure, or the writer stopped).
        case stop
    }

    private let condition = NSCondition()
    private let capacity: Int
    /// The last reader claimed (nil before the first claim).
    private var lastClaimed: ReaderID?
    /// Readers claimed, and readers taken by the writer (sequence numbers below are handed out).
    private var claimed = 0, taken = 0
    /// Delivered and not yet taken, by number; nil: a reader with no events to fold.
    private var delivered: [Int: Result<RebuildFolded?, any Error>] = [:]
    /// No more claims: the reader index had no next reader, or a failure was delivered.
    private var exhausted = false
    private var cancelled = false

    init(capacity: Int) { self.capacity = max(capacity, 1) }

    /// Waits (outside any transaction) until a reader may be claimed; false when no more will.
    func waitForRoom() -> Bool {
        condition.lock()
        defer { condition.unlock() }
        while claimed - taken >= capacity, !exhausted, !cancelled { condition.wait() }
        return !exhausted && !cancelled
    }

    /// Claims the next reader, found by `next` from the last one claimed (inside the worker's read
    /// transaction; every transaction of the pass lists every reader with events to fold). Never
    /// waits. An error of `next` is delivered as a failure.
    func claim(_ next: (ReaderID?) throws -> ReaderID?) -> Claim {
        condition.lock()
        defer { condition.unlock() }
        guard !exhausted, !cancelled else { return .stop }
        guard claimed - taken < capacity else { return .full }
        do {
            guard let reader = try next(lastClaimed) else {
                exhausted = true
                condition.broadcast()
                return .stop
            }
            lastClaimed = reader
            claimed += 1
            return .reader(reader, number: claimed - 1)
        } catch {
            failLocked(error)
            return .stop
        }
    }

    /// Hands the reader claimed under `number` to the writer: its folded views or records, nil for
    /// a reader with no events to fold, or the error folding it threw.
    func deliver(_ number: Int, _ result: Result<RebuildFolded?, any Error>) {
        condition.lock()
        defer { condition.unlock() }
        delivered[number] = result
        if case .failure = result { exhausted = true }
        condition.broadcast()
    }

    /// A worker failed outside any reader's fold (beginning a transaction): the failure takes the
    /// next number, after every reader claimed.
    func fail(_ error: any Error) {
        condition.lock()
        defer { condition.unlock() }
        failLocked(error)
    }

    private func failLocked(_ error: any Error) {
        guard !exhausted else {
            // A failure already ends the pass at or before the next number; or every reader was
            // claimed and this one (of a worker finding nothing more) belongs to none.
            return
        }
        delivered[claimed] = .failure(error)
        claimed += 1
        exhausted = true
        condition.broadcast()
    }

    /// The next reader in reader-ID order, waiting until it is delivered; nil after the last one;
    /// throws the failure delivered under its number.
    func take() throws -> RebuildFolded? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            if let result = delivered.removeValue(forKey: taken) {
                taken += 1
                condition.broadcast()
                guard let folded = try result.get() else { continue }
                return folded
            }
            if exhausted, taken == claimed { return nil }
            condition.wait()
        }
    }

    /// The writer stopped: the workers stop at their next claim.
    func cancel() {
        condition.lock()
        defer { condition.unlock() }
        cancelled = true
        condition.broadcast()
    }
}

/// A rebuild's fold worker, on a thread of its own: claims readers of the reader index in ID order
/// through the window and folds each in memory, in read transactions of whole readers (at least
/// ``ReadingStore/rebuildBatchEvents`` events each, fewer when the window is full), and delivers
/// them to the writer (with more than one worker, encoded: `encodes`). It never waits for the
/// window inside a read transaction (a map resize of the writer waits for every transaction of
/// the process to end).
///
/// `Sendable`: the store, a position, the window and a flag, all `Sendable`.
struct RebuildFolder: Sendable {
    let store: ReadingStore
    let last: UInt64
    let window: RebuildWindow
    let encodes: Bool

    /// Starts the thread; the returned semaphore is signalled when it has ended.
    func start() -> DispatchSemaphore {
        let ended = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            do { try run() } catch { window.fail(error) }
            ended.signal()
        }
        thread.name = "rebuild fold"
        thread.start()
        return ended
    }

    /// Folds readers until none is left, a failure, or the writer stops. Never inlined:
    /// `Scripts/rebuild-instructions.sh` counts the fold threads' instructions between entry to
    /// and exit from this function (callgrind collects per thread).
    @inline(never)
    func run() throws {
        let maintainer = ViewMaintainer(store)
        var more = true
        while more, window.waitForRoom() {
            try store.log.environment.read { txn in
                let placements = try store.placements(txn)
                var events = 0
                while events < ReadingStore.rebuildBatchEvents {
                    switch window.claim({ try store.readerIndexed(after: $0, txn) }) {
                    case .stop:
                        more = false
                        return
                    case .full:
                        return
                    case .reader(let reader, let number):
                        let result = Result { () throws -> RebuildFolded? in
                            let (views, folded) = try maintainer.foldReader(reader, through: last, placements: placements, txn)
                            events += folded
                            // A reader with no events up to `last` (appended during the pass) has no records.
                            guard folded > 0 else { return nil }
                            guard encodes else { return .views(views, events: folded) }
                            var records = ViewDatabases.records(of: views)
                            records.events = folded
                            return .records(records)
                        }
                        window.deliver(number, result)
                        if case .failure = result {
                            more = false
                            return
                        }
                    }
                }
            }
        }
    }
}
