import Foundation
import LMDB
import Projections
import ReadingEvents

#if canImport(Glibc)
import Glibc
#endif

/// The store host apps use: a reader's history as events in an LMDB log, with every view kept in
/// the same LMDB file and updated in the same transaction as the events it folds.
///
/// - ``execute(_:book:context:)`` validates a command with ReadingEvents, appends its events and
///   folds them into the views in one write transaction: either all of it is committed or nothing.
/// - Queries read the persisted views in one short read transaction; none folds history.
/// - Opening a store whose views lag its log (events appended by a process that did not fold
///   them, or a crash of an older build) folds the missing events before returning.
///
/// `Sendable`: it holds only `Sendable` handles; LMDB serializes writers, and every method opens
/// its own transaction.
public final class ReadingStore: Sendable {
    /// The event log underneath. Not public: every write goes through the append pipeline (see
    /// ``append(_:from:_:)``); hosts read it through ``lastPosition()``, ``forEachEvent(from:_:)``
    /// and ``verifyLog(progress:)``.
    let log: EventLog
    /// The hour at which reading days start (0 = midnight), fixed when the store was created.
    public let dayStartHour: Int
    /// This store's replica ID: every event it creates records it (see ``EventOrigin``,
    /// ``merge(_:)``). Fixed when the store is created, and replaced by a new one when the store
    /// notices it is a copy or a restore: at a writable open when its `data.mdb` is not the file
    /// the ID was issued for (a `replay backup`, `cp -r`), and at a merge or a sync when a peer
    /// holds this replica's sequences with other events or beyond this store's head (a backup
    /// restored in place, which keeps the file; see ``noticeRestore(from:)``).
    public var replica: ReplicaID { identity.withLock { $0 } }
    /// The replica ID as this process last read it from `sync.meta` (every write pipeline reads
    /// it again, so a switch made by another process is seen at the next write).
    let identity: Locked<ReplicaID>

    let generations: [ViewDatabases]
    let viewMeta: LMDBDatabase<UTF8String, RawBytes>
    /// `views.meta` again, for its 8-byte big-endian entries (`checkpoint.g0`, `checkpoint.g1`).
    let viewCheckpoints: LMDBDatabase<UTF8String, BigEndianUInt64>
    /// `index.reader`: one key per event, the reader and the event's position; empty values.
    let readerIndex: LMDBDatabase<ReaderPositionKey, RawBytes>
    let groupCommit: GroupCommit
    let sync: SyncTables
    /// Book and reader views as this process's last write transaction left them (see ``ViewMemo``).
    let viewMemo = ViewMemo()

    /// Opens (or creates) a store in `directory`.
    ///
    /// With `options.readOnly` the store is opened without writing anything (also on read-only
    /// media): commands fail with `EACCES`, queries read the views as they were last written,
    /// and views that lag the log are not caught up (compare ``viewCheckpoint()`` with
    /// ``EventLog/lastPosition()``).
    ///
    /// - Parameters:
    ///   - dayStartHour: for a new store, the hour at which reading days start (0 ... 23); an
    ///     existing store keeps the hour it was created with (views depend on it).
    ///   - replica: for a new store, its replica ID (default: a new random one; give a fixed one
    ///     only to reproduce a store, as `replay demo` does from its seed); an existing store keeps
    ///     its own.
    ///   - options: LMDB environment options (map size, readers, read-only).
    ///   - creating: `false` for a command that reads an existing store: an existing LMDB
    ///     environment without an event log (empty, or another program's) is then refused with
    ///     ``EventStoreError/notAStore(path:reason:)`` instead of made into a store.
    public static func open(at directory: URL, dayStartHour: Int = 0, replica: ReplicaID? = nil,
                            options: LMDBEnvironmentOptions = LMDBEnvironmentOptions(), creating: Bool = true) throws -> ReadingStore {
        if replica == .provisional {
            throw EventStoreError.invalidArgument(field: "replica", detail: "\(ReplicaID.provisional) is reserved for provisional origins")
        }
        let log = try EventLog.open(at: directory, options: options, allowingOlderFormat: true, creating: creating)
        return try ReadingStore(log: log, dayStartHour: dayStartHour, replica: replica)
    }

    /// Every named database of the store above the log, opened together at open (one read
    /// transaction when they all exist): `views.meta`, `index.reader`, both generations' view
    /// tables and the sync tables.
    static let databaseNames: [String] = ["views.meta", "index.reader"]
        + ViewDatabases.names(generation: 0) + ViewDatabases.names(generation: 1) + SyncTables.names

    init(log: EventLog, dayStartHour requested: Int, replica requestedReplica: ReplicaID? = nil) throws {
        guard (0...23).contains(requested) else {
            throw EventStoreError.invalidArgument(field: "dayStartHour", detail: "\(requested) is outside 0 ... 23")
        }
        // The log's format first: a store of an older format cannot be read before it is migrated.
        if log.environment.options.readOnly, log.openedFormat < EventLog.formatVersion {
            throw EventStoreError.formatNeedsMigration(found: log.openedFormat, current: EventLog.formatVersion)
        }
        self.log = log
        groupCommit = GroupCommit(environment: log.environment)
        let databases = try log.openDatabases(named: Self.databaseNames)
        viewMeta = databases.database("views.meta")
        viewCheckpoints = databases.database("views.meta")
        readerIndex = databases.database("index.reader")
        generations = [ViewDatabases(databases, generation: 0), ViewDatabases(databases, generation: 1)]
        sync = SyncTables(databases)
        let meta = viewMeta, checkpoints = viewCheckpoints, tables = sync, generationTables = generations
        // What the open checks, read first in one read transaction: an open of a store that
        // needs nothing written (the current format, its day-start hour, replica ID and home
        // recorded, views of the current version that have folded the whole log) writes nothing.
        let stored = try log.environment.read { txn in
            try StoredOpenState(txn, log: log, meta: meta, checkpoints: checkpoints, sync: tables)
        }
        if log.environment.options.readOnly {
            guard let hour = stored.hour else {
                throw EventStoreError.notAStore(path: log.directory.path, reason: "it has no views yet, and it was opened read-only")
            }
            guard let id = stored.replica.flatMap({ ReplicaID(bytes: $0) }) else {
                throw EventStoreError.notAStore(path: log.directory.path, reason: "it has no replica ID yet, and it was opened read-only")
            }
            // Views of an older version are rebuilt by a writable open; their records may not
            // decode with this build's codecs (views version 7 stores details in chunks).
            if let version = stored.viewsVersion, !Self.viewsAreCurrent(version: version, tables: stored.viewTables) {
                throw EventStoreError.viewsNeedUpgrade(found: version, current: Self.viewsVersion)
            }
            dayStartHour = Int(hour)
            identity = Locked(id)
            return
        }
        let home = Self.home(of: log.directory)
        if let current = stored.current(home: home) {
            dayStartHour = current.hour
            identity = Locked(current.replica)
            return
        }
        // One transaction fixes the day-start hour of a new store and decides whether the views
        // need the one-time upgrade: a store whose views were made by a build with fewer view
        // tables or older fold rules (no version: 1) is rebuilt once; a new, empty store starts at
        // the current version.
        // The same transaction gives a new store its replica ID and migrates a store of format 1
        // (its records get their origins; its views are then rebuilt with this build's rules) or
        // of format 2 (its records and stream tables get binary stream keys). It reads the format
        // again: another process may have migrated the store since the read above.
        let (hour, upgrade, id) = try log.environment.write { txn -> (Int, Bool, ReplicaID) in
            var hour = requested
            if let stored = try txn.get(meta, "dayStartHour"), let first = stored.first {
                hour = Int(first)
            } else {
                try txn.put(meta, "dayStartHour", [UInt8(requested)])
            }
            var id: ReplicaID
            let storedHome = try txn.get(tables.meta, "home")
            if let stored = try txn.get(tables.meta, "replica") {
                guard let parsed = ReplicaID(bytes: stored) else {
                    throw EventStoreError.notAStore(path: log.directory.path, reason: "sync.meta holds a replica ID of \(stored.count) bytes, not 16")
                }
                id = parsed
                if let home, let storedHome, storedHome != home {
                    // A copy or a restore (a backup, `cp -r`, a device restored from its backup):
                    // its data file is another file than the one the replica ID was issued for.
                    // It continues as a new replica before it writes anything, so no sequence
                    // number of the old replica is ever issued twice.
                    try Self.retireReplica(parsed, sync: tables, txn)
                    id = ReplicaID()
                    try txn.put(tables.meta, "replica", id.bytes)
                }
            } else {
                id = requestedReplica ?? ReplicaID()
                try txn.put(tables.meta, "replica", id.bytes)
            }
            if let home, storedHome != home { try txn.put(tables.meta, "home", home) }
            let format = try EventLog.storedFormat(log.meta, txn) ?? EventLog.formatVersion
            if format < EventLog.formatVersion {
                try Self.migrate(log: log, from: format, sync: tables, replica: id, txn)
            }
            let last = try log.lastPosition(in: txn)
            let upgrade: Bool
            if let stored = try txn.get(meta, "viewsVersion")?.first {
                upgrade = !Self.viewsAreCurrent(version: stored, tables: try txn.get(meta, "viewTables"))
            } else {
                upgrade = last > 0
            }
            guard upgrade else {
                try Self.stampViews(meta, txn)
                return (hour, false, id)
            }
            // Views of an older version are not folded into (their records may not decode with
            // this build's codecs): the active views are emptied and marked as having folded the
            // whole log, so neither the catch-up below nor the rebuild's folds into them; the
            // rebuild then folds every event into the other generation and makes it active. The
            // version is written only after that, so a crash in between upgrades again at the
            // next open.
            let active = try Self.activeGeneration(txn, viewMeta: meta)
            try generationTables[active].removeAll(txn)
            // The view tables of builds before views version 8, a database each: gone with their
            // records (the views are rebuilt into the generations' one database each).
            for name in ViewDatabases.formerNames { try txn.dropDatabase(named: name) }
            try txn.put(checkpoints, Self.checkpointKey(generation: active), last)
            return (hour, true, id)
        }
        dayStartHour = hour
        identity = Locked(id)
        try catchUp()
        if upgrade {
            _ = try rebuild()
            try log.environment.write { txn in try Self.stampViews(meta, txn) }
        }
    }

    /// The identity of the store's data file: its device and inode numbers (16 bytes), `nil` when
    /// the file system does not tell them. A store whose `data.mdb` is another file than the one its
    /// replica ID was issued for is a copy or a restore.
    static func home(of directory: URL) -> [UInt8]? {
        // stat(2) itself: FileManager's attributes would also look up the owner's and the group's
        // names (reading /etc/passwd and /etc/group) at every open.
        var info = stat()
        guard stat(directory.appendingPathComponent("data.mdb").path, &info) == 0 else { return nil }
        return BigEndianUInt64.encode(UInt64(truncatingIfNeeded: info.st_dev)) + BigEndianUInt64.encode(UInt64(truncatingIfNeeded: info.st_ino))
    }

    /// The version of the persisted views and of the rules that fold them: 2 since the `years`
    /// table (the category, challenge and year-in-review views) and the fold rules of the same
    /// change (an abandoned goal leaves the home list, session seconds from exact instants with a
    /// one-minute reading-day minimum, each session interval in the zone of the event that began
    /// it); 3 since replicas (views folded in canonical order, with the origins of their registers
    /// and the conflict rules of the Replication article); 4 since each book's decision state is
    /// a view record of its own (`decisions`), what commands are decided on, and book views are
    /// stored split (a summary in `books`, one record per page entry, session, sentence and memo); 5 since
    /// the rules of issue 25 (a re-added finished book stays finished, a session's end position
    /// resumes a did-not-finish book, a session closed before its start stays closed) and the
    /// reader's last event in canonical order; 6 since the reader's record keeps its longest
    /// streak run (record format 6); 7 since a book's details are stored in chunks of 32,
    /// varint-encoded (`ViewRecordCodec.chunkFormat`, Projections), not one record each. Opening a store of an
    /// older version rebuilds its views once.
    static let viewsVersion: UInt8 = 8

    /// The names of this build's view tables (``ViewTable``), stamped beside ``viewsVersion``
    /// (meta key `viewTables`): views made by a build with another set of tables (one that added a
    /// table of view records) are rebuilt once at open, as views of an older version are, with no
    /// version to bump by hand.
    static let viewTablesStamp: [UInt8] = Array(ViewTable.allCases.map(\.rawValue).joined(separator: ",").utf8)

    /// The tables of views version 8, the stamp of views stamped before tables were (a frozen
    /// list: it is what such a store holds, whatever this build's tables are).
    private static let version8Tables: [UInt8] = Array(
        "books,bookEntries,bookSessions,bookSentences,bookMemos,decisions,days,bookDays,months,buckets,runs,readers,goals,years".utf8)

    /// Whether views stamped with `version` and `tables` (`nil`: stamped before tables were, so
    /// version 8's) are this build's: of a newer version (a newer build's, left as they are), or
    /// of this version with this build's tables.
    static func viewsAreCurrent(version: UInt8, tables: [UInt8]?) -> Bool {
        guard version <= viewsVersion else { return true }
        return version == viewsVersion && (tables ?? version8Tables) == viewTablesStamp
    }

    /// Stamps the views as this build's: its ``viewsVersion`` and its tables.
    private static func stampViews(_ meta: LMDBDatabase<UTF8String, RawBytes>, _ txn: WriteTransaction) throws {
        try txn.put(meta, "viewsVersion", [viewsVersion])
        try txn.put(meta, "viewTables", viewTablesStamp)
    }

    // MARK: Generations and checkpoints

    func activeGeneration(_ txn: ReadTransaction) throws -> Int {
        try Self.activeGeneration(txn, viewMeta: viewMeta)
    }

    /// The active generation recorded in `viewMeta` (`views.meta`).
    static func activeGeneration(_ txn: ReadTransaction, viewMeta: LMDBDatabase<UTF8String, RawBytes>) throws -> Int {
        Int(try txn.get(viewMeta, "generation")?.first ?? 0) & 1
    }

    /// The active generation's views inside `txn` (in a write transaction, with the session of
    /// the view memo).
    func activeViews(_ txn: ReadTransaction) throws -> LMDBViewStore {
        let generation = try activeGeneration(txn)
        return LMDBViewStore(txn: txn, tables: generations[generation], memo: (txn as? WriteTransaction).map {
            viewMemo.session($0, generation: generation)
        })
    }

    func checkpoint(_ txn: ReadTransaction, generation: Int) throws -> UInt64 {
        try Self.checkpoint(txn, generation: generation, viewCheckpoints: viewCheckpoints)
    }

    /// The checkpoint of `generation` recorded in `viewCheckpoints` (`views.meta`).
    static func checkpoint(_ txn: ReadTransaction, generation: Int, viewCheckpoints: LMDBDatabase<UTF8String, BigEndianUInt64>) throws -> UInt64 {
        try txn.get(viewCheckpoints, checkpointKey(generation: generation)) ?? 0
    }

    func setCheckpoint(_ txn: WriteTransaction, generation: Int, _ position: UInt64) throws {
        try txn.put(viewCheckpoints, Self.checkpointKey(generation: generation), position)
    }

    /// The key of `generation`'s checkpoint in `views.meta`.
    static func checkpointKey(generation: Int) -> String { "checkpoint.g\(generation)" }

    /// The position up to which the active views have folded the log.
    public func viewCheckpoint() throws -> UInt64 {
        try log.environment.read { txn in try checkpoint(txn, generation: activeGeneration(txn)) }
    }

    // MARK: Folding

    /// Decodes a stored record into its envelope (through the one upcast path).
    public static func envelope(of record: RecordedEvent) throws -> EventEnvelope {
        try record.payload.withUnsafeBytes { payload in
            try envelope(payload: payload, position: record.position, eventID: record.eventID, stream: record.key,
                         streamVersion: record.streamVersion)
        }
    }

    /// Decodes a record read in place into its envelope: the same decode as ``envelope(of:)``.
    static func envelope(of record: EventRecord.InPlace, at position: UInt64) throws -> EventEnvelope {
        try envelope(payload: record.payload, position: position, eventID: record.eventID, stream: record.stream,
                     streamVersion: record.streamVersion)
    }

    /// The one decode of a stored event (both forms of a record come here).
    private static func envelope(payload: UnsafeRawBufferPointer, position: UInt64, eventID: UUID, stream key: StreamKey,
                                 streamVersion: UInt64) throws -> EventEnvelope {
        guard let stream = key.streamID else {
            throw EventStoreError.corruptRecord(position: position, reason: "stream \"\(key)\" is not a reader or book stream")
        }
        do {
            var envelope = try BinaryEventCodec.decode(payload, position: position, eventID: EventID(eventID),
                                                       stream: stream, streamVersion: streamVersion)
            if envelope.origin == nil {
                // Appended through the raw log (never stamped): a provisional origin.
                envelope.origin = EventOrigin(stamp: UInt64(max(0, envelope.recordedAt.microseconds)),
                                              replica: .provisional, sequence: position)
            }
            return envelope
        } catch {
            throw EventStoreError.undecodableEvent(position: position, detail: error.description)
        }
    }

    /// Folds every logged event after the active checkpoint, in chunks of short write
    /// transactions; returns how many were folded.
    @discardableResult
    func catchUp() throws -> Int {
        var folded = 0
        while true {
            let count = try log.environment.write { txn -> Int in try foldPending(txn, limit: EventLog.readChunkSize) }
            folded += count
            if count < EventLog.readChunkSize { return folded }
        }
    }

    /// Folds up to `limit` logged events after the active checkpoint inside `txn` (events another
    /// writer appended without folding them); returns how many.
    @discardableResult
    func foldPending(_ txn: WriteTransaction, limit: Int) throws -> Int {
        let from = try checkpoint(txn, generation: activeGeneration(txn))
        let last = try log.lastPosition(in: txn)
        guard last > from else { return 0 }
        let records = try log.events(from: from + 1, limit: min(limit, Int(last - from)), in: txn)
        let placements = try placements(txn)
        try foldAppended(records.map(placements.envelope(of:)), txn)
        return records.count
    }

    /// Folds every pending event into the active views inside `txn`.
    func catchUpAll(_ txn: WriteTransaction) throws {
        while try foldPending(txn, limit: EventLog.readChunkSize) == EventLog.readChunkSize {}
    }

    /// Folds envelopes into the active views, indexes them by reader and moves the checkpoint to
    /// the last: envelopes this transaction has just appended (positions and stream versions set,
    /// not read back from the log), or pending ones read by ``foldPending(_:limit:)``.
    /// Precondition: the active views had folded every event before them.
    /// Returns how many books were refolded (events that sorted before what their book had folded).
    @discardableResult
    func foldAppended(_ envelopes: [EventEnvelope], _ txn: WriteTransaction) throws -> Int {
        guard let last = envelopes.map(\.position).max() else { return 0 }
        let stored = try activeViews(txn)
        // A cache over the type-erased LMDB store: the fold then runs specialized (AnyViewStore).
        var views = CachingViewStore(base: AnyViewStore(stored))
        var maintainer = ViewMaintainer(self)
        for envelope in envelopes {
            try maintainer.fold(envelope, into: &views)
            try txn.put(readerIndex, (envelope.reader, envelope.position), [])
        }
        let refolded = try maintainer.finish(through: last, views: &views, txn)
        try views.flushSpecialized()
        try setCheckpoint(txn, generation: stored.tables.generation, last)
        return refolded
    }

    // MARK: Commands

    /// Validates a book command against the book's decision state, appends the events it decides
    /// and folds them into the views, all in one write transaction.
    ///
    /// The decision state is the small record the views keep beside the book view
    /// (``Projections/BookView/decision``), folded in the same transactions as the views: a command
    /// reads that one record, never the book's stream.
    ///
    /// Retrying a command with the same ``CommandContext/commandID`` (after a crash or a lost
    /// reply) returns the events stored the first time and appends nothing.
    ///
    /// - Throws: ``ValidationError`` for a rejected command (nothing is written), or a store error.
    @discardableResult
    public func execute(_ command: BookCommand, book: BookID, context: CommandContext) throws -> [EventEnvelope] {
        let stream = StreamID.book(reader: context.reader, book: book)
        return try execute(stream: stream, context: context) { txn in
            let state = try decisionState(reader: context.reader, book: book, txn)
            return try command.decide(for: book, in: state, at: context.occurredAt)
        }
    }

    /// Validates a reader command (home order, profile, challenge) against the reader's persisted
    /// views, appends and folds it in one transaction.
    @discardableResult
    public func execute(_ command: ReaderCommand, context: CommandContext) throws -> [EventEnvelope] {
        try execute(stream: .reader(context.reader), context: context) { txn in
            let views = try activeViews(txn)
            let reader = try views.readerView(reader: context.reader) ?? ReaderView()
            var challenges: [Int: ChallengeSet] = [:]
            if case .setChallenge(let year, _, _) = command, let challenge = try views.yearView(reader: context.reader, year: year)?.challenge {
                challenges[year] = challenge
            }
            return try command.decide(in: ReaderState(homeOrder: reader.homeOrder, nickname: reader.nickname, challenges: challenges))
        }
    }

    /// The decision state of a book in the active views (a fresh state for a book never added).
    func decisionState(reader: ReaderID, book: BookID, _ txn: ReadTransaction) throws -> BookState {
        try activeViews(txn).decisionState(reader: reader, book: book) ?? BookState()
    }

    private func execute(stream: StreamID, context: CommandContext,
                         decide: (WriteTransaction) throws -> [ReadingEvent]) throws -> [EventEnvelope] {
        // Check the zone and the instants before deciding, so a bad context is named as such
        // (a year-1 page record is out of range, not "backward").
        _ = try context.envelopes(for: [])
        // `submit` returns only after the leader ran the work, so `decide` never outlives this call.
        let result = try withoutActuallyEscaping(decide) { decide in try groupCommit.submit { [self] txn -> (stored: [EventEnvelope], isNew: Bool) in
            // Fold anything another writer appended without folding, so views stay exactly-once
            // and the decision state is current.
            try catchUpAll(txn)
            if try log.event(withID: context.commandID.uuid, in: txn) != nil {
                var stored: [EventEnvelope] = []
                while let record = try log.event(withID: context.eventID(at: stored.count).uuid, in: txn) {
                    stored.append(try Self.envelope(of: record))
                }
                return (stored: stored, isNew: false)
            }
            let events = try decide(txn)
            guard !events.isEmpty else { return (stored: [EventEnvelope](), isNew: false) }
            let version = try log.streamVersion(of: StreamKey(stream), in: txn)
            let outcome = try append(try context.envelopes(for: events),
                                     from: .command(stream: stream, expectedVersion: version == 0 ? .noStream : .exactly(version)), txn)
            return (stored: outcome.stored, isNew: true)
        } }
        if result.isNew { log.notifyObservers() }
        return result.stored
    }

    /// (commands, write transactions) committed through group commit since the store was opened:
    /// under concurrent writers the first exceeds the second.
    public var groupCommitCounts: (commands: Int, transactions: Int) {
        let counts = groupCommit.counts
        return (counts.requests, counts.transactions)
    }

    /// Appends envelopes made elsewhere (a host's batch, `replay import`), skipping event IDs
    /// already stored, and folds them, all in one write transaction: all of it or nothing.
    /// Envelopes are appended in order, each to its own stream with no version check (the history
    /// already happened); their positions are assigned anew. Returns how many were new.
    ///
    /// Envelopes without an origin are new facts of this replica, checked by the same rules as a
    /// command (see the append pipeline in the Replication article): an event ID already stored or
    /// repeated in the batch must carry the same fact; a book event must pass the decide step on
    /// the book's stored history and the batch's earlier events; every event keeps
    /// ``ReadingEvents/EventEnvelope/validate(pageCount:)`` (page counts from earlier envelopes of
    /// the book, else the store's views). Then they get this store's origin. Envelopes that carry
    /// an origin are events of a replica (an export of a store): they keep it and merge as in
    /// ``merge(_:)``, except that a refused one refuses the batch.
    ///
    /// - Throws: ``RecordedEventRejection`` (an envelope without an origin) or ``MergeRejection``
    ///   (one with an origin) naming the envelope's index in the batch; nothing is written.
    @discardableResult
    public func appendRecorded(_ envelopes: [EventEnvelope]) throws -> Int {
        let written = try log.environment.write { txn -> Int in
            try catchUpAll(txn)
            return try append(envelopes, from: .recorded(listDecideRefusals: false), txn).stored.count
        }
        if written > 0 { log.notifyObservers() }
        return written
    }

    /// Appends envelopes made elsewhere that come in batches (`replay import` reading a file as a
    /// stream, so the file is never all in memory), as ``appendRecorded(_:)`` appends one array:
    /// every batch goes through the same pipeline, all inside one write transaction, so all of it
    /// is committed or nothing is. An event ID of an earlier batch is stored by the time a later
    /// batch repeats it: the same fact is skipped, another fact is a conflict with the stored copy.
    /// `batches` calls its argument with each batch in order; it may be called more than once (the
    /// transaction runs again when the map grows) and must give the same batches each time.
    /// Returns how many were new.
    ///
    /// - Throws: as ``appendRecorded(_:)`` (the index is within its batch), or what `batches`
    ///   throws; nothing is written then.
    @discardableResult
    public func appendRecorded(batches: (_ body: ([EventEnvelope]) throws -> Void) throws -> Void) throws -> Int {
        // One part that nothing fills: one write transaction, and `batches` never skips.
        try appendRecorded(partsOf: .max, batches: { _, body in try withoutActuallyEscaping(body) { try batches($0) } })
    }

    // MARK: Reading

    /// Runs `body` over the active views in one read transaction.
    public func withViews<R>(_ body: (any ViewStore) throws -> R) throws -> R {
        try log.environment.read { txn in
            try body(activeViews(txn))
        }
    }

    /// Decoded events from `position` on, at most `limit`, in log order.
    public func events(from position: UInt64 = 1, limit: Int = .max) throws -> [EventEnvelope] {
        let placements = try log.environment.read { txn in try self.placements(txn) }
        return try log.read(from: position, limit: limit).map(placements.envelope(of:))
    }

    /// The audit trail: every event of `reader` (optionally of one book), in log order.
    public func auditTrail(reader: ReaderID, book: BookID? = nil) throws -> [EventEnvelope] {
        let placements = try log.environment.read { txn in try self.placements(txn) }
        if let book {
            return try log.readStream(StreamKey(.book(reader: reader, book: book))).map(placements.envelope(of:))
        }
        var positions: [UInt64] = []
        try log.environment.read { txn in
            try txn.forEach(readerIndex, prefix: ReaderIDKey.encode(reader)) { key, _ in
                positions.append(key.1)
                return true
            }
        }
        var result: [EventEnvelope] = []
        result.reserveCapacity(positions.count)
        for chunk in stride(from: 0, to: positions.count, by: EventLog.readChunkSize) {
            try log.environment.read { txn in
                for position in positions[chunk..<min(positions.count, chunk + EventLog.readChunkSize)] {
                    guard let record = try log.event(at: position, in: txn) else { continue }
                    result.append(try placements.envelope(of: record))
                }
            }
        }
        return result
    }

    /// Every reader with events in the store.
    public func readers() throws -> [ReaderID] { try withViews { try $0.readers() } }

    /// Positions of new events of `reader` as they are appended (by this or another process; see
    /// ``EventLog/events(after:pollInterval:)`` for the delay bound).
    public func changes(for reader: ReaderID, after position: UInt64? = nil) throws -> AsyncThrowingStream<UInt64, Error> {
        let start = try position ?? log.lastPosition()
        let source = log.events(after: start)
        return AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    for try await record in source {
                        if try Self.envelope(of: record).reader == reader { continuation.yield(record.position) }
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }
}

/// What ``ReadingStore``'s open checks, as one read transaction saw it.
///
/// Not `Sendable`-relevant: a local value of one open.
private struct StoredOpenState {
    let format: UInt32?
    let hour: UInt8?
    let replica: [UInt8]?
    let home: [UInt8]?
    let viewsVersion: UInt8?
    /// The tables the views were stamped with (`nil`: not stamped).
    let viewTables: [UInt8]?
    /// Whether the active views have folded every logged event.
    let foldedAll: Bool

    init(_ txn: ReadTransaction, log: EventLog, meta: LMDBDatabase<UTF8String, RawBytes>,
         checkpoints: LMDBDatabase<UTF8String, BigEndianUInt64>, sync: SyncTables) throws {
        format = try EventLog.storedFormat(log.meta, txn)
        hour = try txn.get(meta, "dayStartHour")?.first
        replica = try txn.get(sync.meta, "replica")
        home = try txn.get(sync.meta, "home")
        viewsVersion = try txn.get(meta, "viewsVersion")?.first
        viewTables = try txn.get(meta, "viewTables")
        let generation = try ReadingStore.activeGeneration(txn, viewMeta: meta)
        foldedAll = try ReadingStore.checkpoint(txn, generation: generation, viewCheckpoints: checkpoints) >= log.lastPosition(in: txn)
    }

    /// The day-start hour and replica ID of a store that needs nothing written at this open (its
    /// data file at `home`, `nil` when unknown): `nil` when it needs the open's write transaction.
    func current(home: [UInt8]?) -> (hour: Int, replica: ReplicaID)? {
        guard format == EventLog.formatVersion, let hour, let id = replica.flatMap({ ReplicaID(bytes: $0) }),
              home == nil || self.home == home, let viewsVersion,
              ReadingStore.viewsAreCurrent(version: viewsVersion, tables: viewTables), foldedAll else { return nil }
        return (Int(hour), id)
    }
}
