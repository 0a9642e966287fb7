import Foundation
import LMDB
import Projections
import ReadingEvents

/// A replica as its 16 UUID bytes.
typealias ReplicaIDKey = IDKey<ReplicaTag>
/// `sync.origins`: a replica and its sequence number (big-endian), so one replica's events are
/// contiguous and in sequence order.
typealias OriginKey = KeyPair<ReplicaIDKey, BigEndianUInt64>

/// `sync.origins` values: the event's position and stamp, 8 bytes big-endian each, so
/// `changes(since:)` orders candidates without decoding a record.
enum OriginEntryCodec: LMDBValueCodec {
    typealias Item = (position: UInt64, stamp: UInt64)
    /// 16 bytes: position, then stamp.
    static func encode(_ item: Item) -> [UInt8] { encoded(item, reserving: 16) }
    /// Appends the 16 bytes in place.
    static func encode(_ item: Item, into bytes: inout [UInt8]) {
        BigEndianUInt64.encode(item.position, into: &bytes)
        BigEndianUInt64.encode(item.stamp, into: &bytes)
    }
    /// Exactly 16 bytes.
    static func decode(_ bytes: UnsafeRawBufferPointer) throws(LMDBError) -> Item {
        guard bytes.count == 16 else {
            throw LMDBError.undecodable(codec: "OriginEntryCodec", "expected 16 bytes, found \(bytes.count)")
        }
        return (try BigEndianUInt64.decode(UnsafeRawBufferPointer(rebasing: bytes[0..<8])),
                try BigEndianUInt64.decode(UnsafeRawBufferPointer(rebasing: bytes[8..<16])))
    }
}

/// The replication tables, written in the same transactions as the events they describe:
/// - `sync.meta`: `replica` (this store's replica ID, 16 bytes), `home` (the device and inode of
///   the `data.mdb` the replica ID was issued for: a copy or a restore gets a new replica ID, see
///   ``ReadingStore/open(at:dayStartHour:replica:options:)``) and `clock` (8 bytes big-endian:
///   the latest stamp held of other replicas when it is later than this replica's latest; the
///   hybrid logical clock is the later of it and the stamp of this replica's last origin);
/// - `sync.vector`: every other replica heard of, with the highest sequence up to which every
///   event of it is held or quarantined (the version vector; 0 while its first event is missing).
///   This replica's own head is its last sequence in `sync.origins` (a store holds every event it
///   made), so a local append writes neither the clock nor the vector (format 4);
/// - `sync.origins`: (replica, sequence) -> (position, stamp), one entry per stamped copy held:
///   the record's own origin, and each alias (another replica's copy of the same event);
/// - `sync.aliases`: (replica, sequence) -> (position, recordedAt) of every alias;
/// - `sync.placement`: position -> the canonical copy's origin and recordedAt, for the events whose
///   record is not their canonical copy (an alias sorts first);
/// - `sync.quarantine`: events of other replicas a merge could not take, with the reason.
///
/// `Sendable`: database handles only.
struct SyncTables: Sendable {
    static let names = ["sync.meta", "sync.vector", "sync.origins", "sync.aliases", "sync.placement", "sync.quarantine"]
    let meta: LMDBDatabase<UTF8String, RawBytes>
    let clock: LMDBDatabase<UTF8String, BigEndianUInt64>
    let vector: LMDBDatabase<ReplicaIDKey, BigEndianUInt64>
    let origins: LMDBDatabase<OriginKey, OriginEntryCodec>
    let aliases: LMDBDatabase<OriginKey, AliasEntryCodec>
    let placement: LMDBDatabase<BigEndianUInt64, CanonicalCopyCodec>
    let quarantine: LMDBDatabase<RawBytes, RawBytes>

    /// The sync tables of `log`'s store, opened together (created when missing, in a writable store).
    init(log: EventLog) throws {
        self.init(try log.openDatabases(named: Self.names))
    }

    /// The sync tables from `databases`, which the store opened together (see
    /// ``ReadingStore/databaseNames``): ``names`` must be among them.
    init(_ databases: LMDBDatabaseSet) {
        meta = databases.database("sync.meta")
        clock = databases.database("sync.meta")
        vector = databases.database("sync.vector")
        origins = databases.database("sync.origins")
        aliases = databases.database("sync.aliases")
        placement = databases.database("sync.placement")
        quarantine = databases.database("sync.quarantine")
    }
}

/// What ``ReadingStore/merge(_:)`` did.
///
/// `Sendable`: integers.
public struct MergeResult: Hashable, Sendable, CustomStringConvertible {
    /// Envelopes given.
    public var received: Int
    /// Events new to this store: appended and folded.
    public var appended: Int
    /// Events this store already held (or repeated in the batch): skipped.
    public var alreadyHeld: Int
    /// Books refolded because an event sorted before what they had folded (it arrived late).
    public var refoldedBooks: Int
    /// Events kept aside in the quarantine (``ReadingStore/quarantine()``): no receiver can take
    /// them; everything else merged.
    public var quarantined: Int

    /// The restore this merge noticed (the batch held this replica's sequences with other events,
    /// or beyond its head): the store continued as a new replica before merging. `nil` when none.
    public var restore: RestoreNotice?

    /// Creates a result.
    public init(received: Int = 0, appended: Int = 0, alreadyHeld: Int = 0, refoldedBooks: Int = 0, quarantined: Int = 0,
                restore: RestoreNotice? = nil) {
        self.received = received; self.appended = appended; self.alreadyHeld = alreadyHeld; self.refoldedBooks = refoldedBooks
        self.quarantined = quarantined; self.restore = restore
    }

    /// The sum of two results (pages of one exchange).
    public static func + (l: MergeResult, r: MergeResult) -> MergeResult {
        MergeResult(received: l.received + r.received, appended: l.appended + r.appended, alreadyHeld: l.alreadyHeld + r.alreadyHeld,
                    refoldedBooks: l.refoldedBooks + r.refoldedBooks, quarantined: l.quarantined + r.quarantined,
                    restore: l.restore ?? r.restore)
    }

    /// "N received: A new, H already held, R books refolded" (and ", Q quarantined" when any, and
    /// the restore noticed).
    public var description: String {
        "\(received) received: \(appended) new, \(alreadyHeld) already held, \(refoldedBooks) books refolded"
            + (quarantined > 0 ? ", \(quarantined) quarantined (see `replay sync quarantine`)" : "")
            + (restore.map { "; \($0)" } ?? "")
    }
}

/// A merge batch refused as a whole (nothing of it is written): one envelope is not a well-formed
/// event of another replica. Conflicts with this store's state are never a reason: a remote event
/// is a fact that happened elsewhere, and the views' conflict rules place it.
///
/// `Sendable`: values.
public struct MergeRejection: Error, Hashable, Sendable, CustomStringConvertible {
    /// The envelope's index in the batch (0-based).
    public let index: Int
    /// Its event ID.
    public let eventID: EventID
    /// The field that breaks the rule ("origin", "sequence", "stream", "occurredAt", ...).
    public let field: String
    /// The rule broken.
    public let rule: ValidationRule
    /// What is wrong, in a sentence.
    public let detail: String

    /// Creates a rejection.
    public init(index: Int, eventID: EventID, field: String, rule: ValidationRule, detail: String) {
        self.index = index; self.eventID = eventID; self.field = field; self.rule = rule; self.detail = detail
    }

    /// "envelope N, event ID: field: detail [rule: r]".
    public var description: String { "envelope \(index + 1), event \(eventID): \(field): \(detail) [rule: \(rule.rawValue)]" }
}

extension ReadingStore {
    // MARK: Sync state

    /// This store's sync state: per replica, the highest sequence up to which it holds every event
    /// (replicas with a gap at their first event are left out).
    public func versionVector() throws -> VersionVector {
        try log.environment.read { txn in try versionVector(txn) }
    }

    func versionVector(_ txn: ReadTransaction) throws -> VersionVector {
        VersionVector(try heads(txn))
    }

    /// Every replica's head: the other replicas' from `sync.vector`, this replica's from its last
    /// origin (left out while it has made no event).
    func heads(_ txn: ReadTransaction) throws -> [ReplicaID: UInt64] {
        var heads: [ReplicaID: UInt64] = [:]
        try txn.forEach(sync.vector) { replica, head in
            heads[replica] = head
            return true
        }
        let own = try Self.lastOrigin(of: replica, sync: sync, txn)
        if own.sequence > 0 { heads[replica] = own.sequence }
        return heads
    }

    /// The sequence and stamp of `replica`'s last entry in `sync.origins` (0 and 0 when it has
    /// none): for this store's own replica, its head and its latest stamp.
    static func lastOrigin(of replica: ReplicaID, sync: SyncTables, _ txn: ReadTransaction) throws -> (sequence: UInt64, stamp: UInt64) {
        var last: (sequence: UInt64, stamp: UInt64) = (0, 0)
        // One seek to the replica's highest possible key and a step back, over raw bytes (the
        // generic decode costs more than the lookup on this per-append path).
        try txn.forEachRaw(sync.origins, from: OriginKey.encode((replica, .max)), direction: .backward, prefix: replica.bytes) { key, value in
            let entry = try OriginEntryCodec.decode(value)
            last = (try BigEndianUInt64.decode(UnsafeRawBufferPointer(rebasing: key[(key.count - 8)...])), entry.stamp)
            return false
        }
        return last
    }

    /// The hybrid logical clock: the later of the stored clock (other replicas' stamps) and this
    /// replica's latest stamp.
    func clock(_ txn: ReadTransaction) throws -> UInt64 {
        max(try txn.get(sync.clock, "clock") ?? 0, try Self.lastOrigin(of: replica, sync: sync, txn).stamp)
    }

    /// Stores what is derived from `replica`'s origins while it is this store's replica (its head
    /// in `sync.vector`, its latest stamp in the clock), before the store continues as a new
    /// replica (a copy or a restore): then it is another replica, whose head and stamps are stored.
    static func retireReplica(_ replica: ReplicaID, sync: SyncTables, _ txn: WriteTransaction) throws {
        let last = try lastOrigin(of: replica, sync: sync, txn)
        guard last.sequence > 0 else { return }
        try txn.put(sync.vector, replica, last.sequence)
        if last.stamp > (try txn.get(sync.clock, "clock") ?? 0) { try txn.put(sync.clock, "clock", last.stamp) }
    }

    /// The events this store holds that a peer with version vector `peer` may lack, in canonical
    /// order: every stamped event whose sequence is above the peer's head for its replica (events
    /// the peer holds beyond a gap of its own come again; ``merge(_:)`` skips them).
    ///
    /// Page through a large answer with `after`: pass the origin of the last event of the previous
    /// page (with the same `peer`), until a page is empty.
    ///
    /// Events appended through the raw ``EventLog`` API carry no origin and never leave the store.
    ///
    /// - Parameters:
    ///   - peer: the peer's ``versionVector()`` (empty for a new peer: everything).
    ///   - after: only events after this origin in canonical order.
    ///   - limit: at most this many events (1 or more).
    public func changes(since peer: VersionVector, after: EventOrigin? = nil, limit: Int = 10_000) throws -> [EventEnvelope] {
        guard limit > 0 else { throw EventStoreError.invalidArgument(field: "limit", detail: "\(limit) is not 1 or more") }
        return try log.environment.read { txn in
            // Candidates from the origins index alone (no record decoded): per replica, the events
            // above the peer's head and after `after`, at most `limit` of them (a replica's
            // sequence order is canonical, so no later one of it can make the page).
            var candidates: [(origin: EventOrigin, position: UInt64)] = []
            var replicas: [ReplicaID] = [replica]
            try txn.forEach(sync.vector) { other, _ in
                if other != replica { replicas.append(other) }
                return true
            }
            for replica in replicas {
                var taken = 0
                // A peer claiming the last sequence there is lacks nothing of this replica (and
                // the next sequence would overflow).
                guard peer[replica] < UInt64.max else { continue }
                try txn.forEach(sync.origins, from: (replica, peer[replica] + 1), prefix: replica.bytes) { key, entry in
                    let origin = EventOrigin(stamp: entry.stamp, replica: replica, sequence: key.1)
                    if let after, origin <= after { return true }
                    candidates.append((origin, entry.position))
                    taken += 1
                    return taken < limit
                }
            }
            candidates.sort { $0.origin < $1.origin }
            var envelopes: [EventEnvelope] = []
            envelopes.reserveCapacity(min(limit, candidates.count))
            for (origin, position) in candidates.prefix(limit) {
                guard let record = try log.event(at: position, in: txn) else {
                    throw EventStoreError.corruptRecord(position: position, reason: "sync.origins names it, but the log has no such position")
                }
                var envelope = try Self.envelope(of: record)
                if envelope.origin != origin {
                    // Another replica's copy of the event (an alias): sent as that copy.
                    guard let alias = try txn.get(sync.aliases, (origin.replica, origin.sequence)), alias.position == position else {
                        throw EventStoreError.corruptRecord(position: position, reason: "sync.origins names it as \(origin), but it carries \(envelope.origin.map(String.init(describing:)) ?? "no origin") and no alias of it is recorded")
                    }
                    if let version = alias.version {
                        // Another version of an imported row: sent as that version.
                        envelope = try Self.decodeVersion(version, at: position)
                    }
                    envelope.origin = origin
                    envelope.recordedAt = alias.recordedAt
                }
                envelopes.append(envelope)
            }
            return envelopes
        }
    }

    // MARK: Merge

    /// Applies events of other replicas (a peer's ``changes(since:after:limit:)``, the sync
    /// server's answer), in one all-or-nothing write transaction: events this store does not hold
    /// are appended in canonical order and folded into the views; events it holds are skipped. A
    /// well-formed event is never refused for conflicting with this store's state: the views place
    /// it by canonical order and the conflict rules (see the Replication article), refolding only
    /// the books it arrives late for.
    ///
    /// Another replica's copy of an event this store holds (the same event ID and the same fact,
    /// ``ReadingEvents/EventEnvelope/recordsSameFact(as:)``, with another origin: the same export
    /// imported on two devices) is kept as an alias of the held record; the copy whose origin sorts
    /// first is the canonical one on every replica.
    ///
    /// An envelope no receiver can take is kept aside in the quarantine with its reason
    /// (``quarantine()``), and everything else merges, so one bad record never stops a sync: one
    /// that fails ``ReadingEvents/EventEnvelope/validateReplicated(pageCount:)`` (no origin, the
    /// provisional replica, a stream that does not fit the payload, a value rule), one whose event ID is held (or repeated
    /// in the batch) with another fact, or one whose replica and sequence already name another
    /// event. ``retryQuarantine()`` merges the quarantine again (after an upgrade that accepts more).
    ///
    /// The batch may come in any order, repeat events, and leave gaps; the version vector moves
    /// only over contiguous sequences (held or quarantined).
    ///
    /// A batch holding an event of this store's own replica beyond its last sequence, which the
    /// store never held, shows that the store was restored from a backup or copied (the peer heard
    /// of the replica's events the store lost): the store first continues as a new replica
    /// (see ``noticeRestore(from:)``, ``MergeResult/restore``), then merges the batch. (A copy of a
    /// held event under such a sequence, or another event under a sequence it issued, is
    /// quarantined: only ``noticeRestore(from:)`` with a peer's witnesses takes the latter as a sign.)
    @discardableResult
    public func merge(_ envelopes: [EventEnvelope]) throws -> MergeResult {
        try merge(envelopes, readers: nil)
    }

    /// ``merge(_:)`` that keeps only the events of `readers` (a sync client's reader and its
    /// partners): an event of any other reader (a server that sends records of a reader never
    /// paired) is kept in the quarantine with its reason, like any record no receiver takes.
    /// `nil` keeps every reader's events.
    @discardableResult
    public func merge(_ envelopes: [EventEnvelope], readers: Set<ReaderID>?) throws -> MergeResult {
        let before = replica
        let result: MergeResult
        do {
            result = try log.environment.write { txn -> MergeResult in
                try refreshIdentity(txn)
                try catchUpAll(txn)
                // A batch holding this replica's sequences with other events (or beyond its head)
                // comes from a peer that heard of this replica before this store was restored: the
                // store continues as a new replica first, and the batch then merges as another
                // replica's events.
                let restore = try noticeRestore(in: envelopes, txn)
                var merged = try append(envelopes, from: .replicated(readers: readers), txn).merge
                merged.restore = restore
                return merged
            }
        } catch {
            // Nothing was committed: the replica ID is the one the store had.
            identity.withLock { $0 = before }
            throw error
        }
        if result.appended > 0 || result.restore != nil { log.notifyObservers() }
        return result
    }

    /// What a merge does with an envelope it cannot take.
    enum MergeMode {
        /// Sync: keep it in the quarantine with its reason, and merge the rest.
        case quarantine
        /// An import or a host's batch: refuse the whole batch (``MergeRejection``, nothing
        /// written), also for a position or page beyond the book's page count as known from the
        /// batch and the store (a replica's own decide step kept it within its page count).
        case refuse
    }

    // MARK: Transport state

    /// A small piece of state a sync transport keeps with the store (a server's pull cursor, the
    /// vector a server has acknowledged; the "state token" of CKSyncEngine's shape), or `nil`.
    public func transportState(_ key: String) throws -> [UInt8]? {
        let name = try Self.transportKey(key)
        return try log.environment.read { txn in try txn.get(sync.meta, name) }
    }

    /// Stores (or, with `nil`, removes) a transport's state under `key`, durably, in its own
    /// write transaction.
    ///
    /// - Throws: ``EventStoreError/invalidArgument(field:detail:)`` for an empty key, one over 200
    ///   UTF-8 bytes, or a value over 64 KiB.
    public func setTransportState(_ key: String, _ value: [UInt8]?) throws {
        let name = try Self.transportKey(key)
        if let value, value.count > 65_536 {
            throw EventStoreError.invalidArgument(field: "transport state", detail: "\(value.count) bytes; at most 65536")
        }
        try log.environment.write { txn in
            if let value { try txn.put(sync.meta, name, value) } else { _ = try txn.delete(sync.meta, name) }
        }
    }

    /// Every transport state whose key starts with `prefix` (a transport's list kept one entry
    /// per key, such as the records a server refused), in the byte order of the keys, with the
    /// keys as given to ``setTransportState(_:_:)``. No limit: a transport keeps as many as it
    /// stores.
    ///
    /// - Throws: ``EventStoreError/invalidArgument(field:detail:)`` for an empty prefix or one
    ///   over 200 UTF-8 bytes.
    public func transportStates(withPrefix prefix: String) throws -> [(key: String, value: [UInt8])] {
        let name = try Self.transportKey(prefix)
        let dropped = "transport.".count
        return try log.environment.read { txn in
            var found: [(key: String, value: [UInt8])] = []
            try txn.forEach(sync.meta, prefix: Array(name.utf8)) { key, value in
                found.append((String(key.dropFirst(dropped)), value))
                return true
            }
            return found
        }
    }

    /// Replaces every transport state whose key starts with `prefix` by `states` (each key starts
    /// with `prefix`; an empty dictionary removes them all), durably, in one write transaction:
    /// a crash leaves the old entries or the new ones, never a mix.
    ///
    /// - Throws: ``EventStoreError/invalidArgument(field:detail:)`` for an empty key or prefix,
    ///   one over 200 UTF-8 bytes, a key that does not start with `prefix`, or a value over
    ///   64 KiB; nothing is written.
    public func replaceTransportStates(withPrefix prefix: String, by states: [String: [UInt8]]) throws {
        let name = try Self.transportKey(prefix)
        var entries: [(String, [UInt8])] = []
        for (key, value) in states {
            guard key.hasPrefix(prefix) else {
                throw EventStoreError.invalidArgument(field: "transport state key", detail: "\(key) does not start with \(prefix)")
            }
            guard value.count <= 65_536 else {
                throw EventStoreError.invalidArgument(field: "transport state", detail: "\(value.count) bytes; at most 65536")
            }
            entries.append((try Self.transportKey(key), value))
        }
        try log.environment.write { txn in
            var old: [String] = []
            try txn.forEach(sync.meta, prefix: Array(name.utf8)) { key, _ in
                old.append(key)
                return true
            }
            for key in old where states[String(key.dropFirst("transport.".count))] == nil { _ = try txn.delete(sync.meta, key) }
            for (key, value) in entries {
                if try txn.get(sync.meta, key) != value { try txn.put(sync.meta, key, value) }
            }
        }
    }

    private static func transportKey(_ key: String) throws -> String {
        guard !key.isEmpty, key.utf8.count <= 200 else {
            throw EventStoreError.invalidArgument(field: "transport state key", detail: "must be 1 ... 200 UTF-8 bytes, not \(key.utf8.count)")
        }
        return "transport." + key
    }

    // MARK: Stamping

    /// Gives new local events their origins: this replica, its next sequence numbers, and stamps
    /// from the hybrid logical clock (`max(recordedAt, latest stamp held + 1)`, see
    /// ``ReadingEvents/EventOrigin/nextStamp(after:recordedAt:)``: a `recordedAt` more than a day
    /// behind the clock is raised to a day before the stamp, so every receiver takes the stamp),
    /// replacing any origin they carried.
    ///
    /// - Throws: ``EventStoreError/invalidArgument(field:detail:)`` (`origin.stamp`) when the clock
    ///   would stamp an event at or after 2200-01-01, which no decoder reads back: nothing is
    ///   appended (a store reaches it only by holding stamps an older build took from elsewhere).
    func stampLocal(_ envelopes: inout [EventEnvelope], _ txn: WriteTransaction) throws {
        guard !envelopes.isEmpty else { return }
        let last = try Self.lastOrigin(of: replica, sync: sync, txn)
        var clock = max(try txn.get(sync.clock, "clock") ?? 0, last.stamp)
        var sequence = last.sequence
        for index in envelopes.indices {
            guard let next = EventOrigin.nextStamp(after: clock, recordedAt: envelopes[index].recordedAt) else {
                throw EventStoreError.invalidArgument(
                    field: "origin.stamp",
                    detail: "this store's clock (\(clock)) has reached 2200-01-01, which no decoder accepts, through a stamp an older build took from elsewhere; nothing was appended")
            }
            clock = next.stamp
            sequence += 1
            envelopes[index].recordedAt = next.recordedAt
            envelopes[index].origin = EventOrigin(stamp: clock, replica: replica, sequence: sequence)
        }
    }

    /// Records the origins of just-appended events (with their positions): the origins index, the
    /// stored clock when another replica's stamp passes the clock (this replica's own stamps are
    /// read from its last origin), and each other touched replica's head moved over every
    /// contiguous sequence now held.
    func noteOrigins(_ stored: [EventEnvelope], _ txn: WriteTransaction) throws {
        guard !stored.isEmpty else { return }
        var latest: UInt64 = 0
        for envelope in stored {
            guard let origin = envelope.origin else { continue }
            try txn.put(sync.origins, (origin.replica, origin.sequence), (envelope.position, origin.stamp))
            if origin.replica != replica { latest = max(latest, origin.stamp) }
        }
        if latest > 0, latest > (try clock(txn)) { try txn.put(sync.clock, "clock", latest) }
        try moveHeads(over: stored.compactMap(\.origin), txn)
    }

    /// Moves each touched replica's head over the given sequences (just recorded) and then over
    /// every sequence held or quarantined that now joins it.
    func moveHeads(over origins: [EventOrigin], _ txn: WriteTransaction) throws {
        var touched: [ReplicaID: [UInt64]] = [:]
        // This replica's head is its last origin: nothing to move.
        for origin in origins where origin.replica != replica { touched[origin.replica, default: []].append(origin.sequence) }
        for (replica, sequences) in touched {
            // The head moves over the sequences just written without reading them back (a local
            // batch is contiguous), then over any held before that now join it.
            var head = try txn.get(sync.vector, replica) ?? 0
            for sequence in sequences.sorted() where sequence > head {
                guard sequence == head + 1 else { break }
                head = sequence
            }
            while try txn.get(sync.origins, (replica, head + 1)) != nil
                    || txn.get(sync.quarantine, Self.quarantineSlot(EventOrigin(stamp: 0, replica: replica, sequence: head + 1))) != nil {
                head += 1
            }
            try txn.put(sync.vector, replica, head)
        }
    }
}
