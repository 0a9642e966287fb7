import Foundation
import Logging
import NIOCore
import PostgresNIO
import ReadingEvents
import SyncWire

/// The server's data in PostgreSQL (``SyncStore``): readers, devices, events, partnerships,
/// invites and share settings. Every method names the reader it acts for, and every query is
/// scoped by it.
///
/// `Sendable`: holds a `PostgresClient` (Sendable) and constants.
public struct PostgresSyncStore: SyncStore {
    /// The connection pool.
    public let client: PostgresClient
    /// The pool pulls read from: a streaming read replica's (`--replica-url`), or ``client``.
    /// A replica replays the primary's commits in order, and a reader's arrivals commit in
    /// increasing order, so what a replica holds of a reader is a prefix of its log: a page read
    /// there ends at the replica's position, and the cursor never passes an event the replica has
    /// not replayed yet (it arrives on a later pull).
    public let reads: PostgresClient
    /// Where queries log.
    public let logger: Logger

    /// The LISTEN/NOTIFY channel of the live stream. Payloads: `e:<reader>:<group>,<group>` (new
    /// events of a reader, in these share groups) and `p:<reader>,<reader>` (partnerships or share
    /// settings of these readers changed).
    public static let channel = "reading_sync"

    /// Tests only: `SYNC_TEST_PULL_PAUSE_MS` makes every pull pause this long between its read of
    /// the share settings and its read of the events, so that a test can force a settings change
    /// and a push in between (`PullSnapshotTests`). Unset in production.
    static let testPullPause: Duration? = ProcessInfo.processInfo.environment["SYNC_TEST_PULL_PAUSE_MS"]
        .flatMap { Int($0) }.map { .milliseconds($0) }

    /// Devices recently authenticated by this process (see ``TokenCache``).
    public let tokens = TokenCache()

    /// How long a request waits for a pooled connection while the pool hands none out (a database
    /// that is down, frozen or has every connection stuck) before it is answered 503.
    public let acquireTimeout: Duration
    /// How long a request waits for its turn at a pooled connection while the pool keeps handing
    /// connections out (a busy database): it is answered 503 after this (or after
    /// ``acquireTimeout``, when that is longer) in any case.
    public let maxQueueWait: Duration
    /// When each pool last handed a connection out (the primary's, and the replica's when there
    /// is one): what tells a busy database from a stalled one.
    let progress = PoolProgress(), readProgress = PoolProgress()
    /// How long a request's database work may take once it has its connection before it is
    /// answered 503 (a frozen database or a dead connection: nothing waits for good).
    public let statementTimeout: Duration
    /// Pulls go to the primary while the replica is down (for ``replicaRetry`` after a failure)
    /// or replays more than this behind.
    public let maxReplicaLag: Duration
    /// See ``maxReplicaLag``.
    public let replicaRetry: Duration = .seconds(5)
    /// What this process knows of the replica (see ``withReadConnection(_:)``).
    let replicaState = ReplicaState()

    /// Creates a store over a running client.
    public init(client: PostgresClient, reads: PostgresClient? = nil, logger: Logger, acquireTimeout: Duration = .seconds(2),
                maxQueueWait: Duration = .seconds(30), statementTimeout: Duration = .seconds(10), maxReplicaLag: Duration = .seconds(30)) {
        self.client = client
        self.reads = reads ?? client
        self.hasReplica = reads != nil
        self.logger = logger
        self.acquireTimeout = acquireTimeout
        self.maxQueueWait = maxQueueWait
        self.statementTimeout = statementTimeout
        self.maxReplicaLag = maxReplicaLag
    }

    /// Whether pulls read from a replica.
    let hasReplica: Bool

    /// Runs `body` on a pooled connection (of ``reads`` when `reading`; pulls use
    /// ``withReadConnection(_:)``). Waits for the connection as long as the pool keeps handing
    /// connections out to the requests ahead (a busy database: the request waits its turn, at
    /// most ``maxQueueWait``), and throws 503 `unavailable` once the pool has handed none out for
    /// ``acquireTimeout`` (a database that is down, restarting or frozen: the pool itself would
    /// wait for it as long as it takes). Once it has the connection, `body` has
    /// ``statementTimeout`` more, then 503 too: the work goes on in the background (it is
    /// cancelled) and ends with its connection.
    ///
    /// Before (issue 38), every request waited at most ``acquireTimeout``: with 1,000 devices
    /// against a pool of 20, 83-95% of the pushes of a saturated but healthy server were answered
    /// 503 after being read, decoded and validated, and that refused work took most of the CPU.
    func withConnection<R: Sendable>(reading: Bool = false,
                                     _ body: @escaping @Sendable (PostgresConnection) async throws -> R) async throws -> R {
        try await withConnection(on: reading ? reads : client, body)
    }

    func withConnection<R: Sendable>(on client: PostgresClient,
                                     _ body: @escaping @Sendable (PostgresConnection) async throws -> R) async throws -> R {
        let outcome = Outcome<R>()
        let (acquireTimeout, maxQueueWait, statementTimeout, logger) = (acquireTimeout, maxQueueWait, statementTimeout, logger)
        let progress = client === self.client ? progress : readProgress
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<R, any Error>) in
                // Unstructured: a query on a frozen database does not end when cancelled, and a
                // task group would wait for it.
                let work = Task {
                    do {
                        let value = try await client.withConnection { connection in
                            progress.handedOut()
                            // The statement's time counts from now, when the connection came (a
                            // frozen database on an open connection was answered after the acquire
                            // timeout plus the statement timeout: 12 s, issue 38).
                            let acquired = outcome.acquired {
                                Task {
                                    try await Task.sleep(for: statementTimeout)
                                    if outcome.finish(.failure(APIError.unavailable)) {
                                        logger.error("the database did not answer within \(statementTimeout): answering 503")
                                    }
                                }
                            }
                            // Answered already (503 after the acquire timeout, or the request is
                            // gone): the work does not run. Before, a connection handed over as the
                            // acquire timer fired ran the work anyway (issue 38).
                            guard acquired else { throw CancellationError() }
                            return try await body(connection)
                        }
                        outcome.finish(.success(value))
                    } catch {
                        outcome.finish(.failure(error))
                    }
                }
                let timer = Task {
                    let started = ContinuousClock.now
                    let latest = started + max(maxQueueWait, acquireTimeout)
                    var deadline = started + acquireTimeout
                    while true {
                        try await Task.sleep(until: deadline, clock: .continuous)
                        // A connection handed out within the last acquire timeout: the database
                        // serves the requests ahead, and this one keeps its place in the queue.
                        guard deadline < latest, let last = progress.lastHandedOut, last + acquireTimeout > .now else { break }
                        deadline = min(last + acquireTimeout, latest)
                    }
                    if outcome.finish(.failure(APIError.unavailable), unlessAcquired: true) {
                        if deadline < latest {
                            logger.error("no database connection handed out for \(acquireTimeout): answering 503")
                        } else {
                            logger.error("no database connection within \(maxQueueWait) of waiting in turn: answering 503")
                        }
                    }
                }
                outcome.start(continuation, work: work, timer: timer)
            }
        } onCancel: {
            outcome.finish(.failure(CancellationError()))
        }
    }

    /// Runs a read (a pull) on the replica when one is configured and usable, else on the primary:
    /// a replica that fails (down, restarting, unreachable) is left for ``replicaRetry`` and the
    /// read runs again on the primary; a replica more than ``maxReplicaLag`` behind (probed at most
    /// once a second) is left until it catches up.
    func withReadConnection<R: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> R) async throws -> R {
        guard hasReplica else { return try await withConnection(on: client, body) }
        if replicaState.probeDue() {
            let lag = try? await replicaLag()
            replicaState.probed(lag: lag, bound: maxReplicaLag, retry: replicaRetry)
            if lag == nil { logger.warning("the read replica does not answer: pulls read from the primary") }
            else if let lag, lag > maxReplicaLag { logger.warning("the read replica is \(lag) behind: pulls read from the primary") }
        }
        if replicaState.usable {
            do {
                return try await withConnection(on: reads, body)
            } catch let error as APIError where error.code != APIError.unavailable.code {
                throw error
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                replicaState.failed(retry: replicaRetry)
                logger.warning("the read replica failed (\(String(reflecting: error))): pulls read from the primary for \(replicaRetry)")
            }
        }
        return try await withConnection(on: client, body)
    }

    /// How far the replica's replay is behind what it received (0 when it replayed everything).
    func replicaLag() async throws -> Duration {
        let seconds = try await withConnection(on: reads) { connection in
            let rows = try await connection.query("""
                SELECT CASE WHEN pg_last_wal_receive_lsn() IS NULL OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
                            ELSE coalesce(extract(epoch FROM now() - pg_last_xact_replay_timestamp()), 0) END::float8
                """, logger: logger).collect()
            return try rows.first?.decode(Double.self) ?? 0
        }
        return .milliseconds(Int64(seconds * 1000))
    }

    /// `/health`: the primary (throws 503 when it does not answer) and, when configured, the
    /// replica: `ok`, `lagging` (over ``maxReplicaLag`` behind) or `unavailable`.
    public func health() async throws -> [String: String] {
        try await ping()
        var report = ["status": "ok", "primary": "ok"]
        if hasReplica {
            let lag = try? await replicaLag()
            replicaState.probed(lag: lag, bound: maxReplicaLag, retry: replicaRetry)
            report["replica"] = lag.map { $0 > maxReplicaLag ? "lagging" : "ok" } ?? "unavailable"
        }
        return report
    }

    /// Runs `query` on a pooled connection (see ``withConnection(reading:_:)``; of ``reads`` when
    /// `reading`) and returns its rows.
    func rows(_ query: PostgresQuery, reading: Bool = false) async throws -> [PostgresRow] {
        try await withConnection(reading: reading) { connection in try await connection.query(query, logger: logger).collect() }
    }

    /// Runs `body` in one transaction; an ``APIError`` thrown by `body` rolls back and is rethrown as is.
    func transaction<R: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> R) async throws -> R {
        do {
            return try await withConnection { connection in
                try await connection.withTransaction(logger: logger) { connection in try await body(connection) }
            }
        } catch let error as PostgresTransactionError {
            if let api = error.closureError as? APIError, error.rollbackError == nil { throw api }
            throw error
        }
    }

    // MARK: Devices



    /// Registers the first device of a reader that the server does not know yet; 409 when the
    /// reader exists (further devices register with an existing device's token).
    public func registerFirstDevice(reader: UUID, name: String) async throws -> Registration {
        try await transaction { connection in
            let inserted = try await connection.query(
                "INSERT INTO readers (reader_id) VALUES (\(reader)) ON CONFLICT DO NOTHING RETURNING reader_id",
                logger: logger).collect()
            guard !inserted.isEmpty else {
                throw APIError(.conflict, "reader_exists", field: "reader",
                               "this reader is registered; register another device with a token of one of its devices")
            }
            return try await insertDevice(connection, reader: reader, name: name)
        }
    }

    /// Registers another device of the authenticated device's reader; 409 `device_limit` when the
    /// reader has `limit` devices that are not revoked (the reader's row lock orders concurrent
    /// registrations, so the count holds).
    public func registerDevice(for device: SyncDevice, name: String, limit: Int) async throws -> Registration {
        try await transaction { connection in
            let rows = try await connection.query("""
                SELECT (SELECT count(*) FROM devices WHERE reader_id = \(device.reader) AND revoked_at IS NULL)::bigint
                FROM readers WHERE reader_id = \(device.reader) FOR UPDATE
                """, logger: logger).collect()
            if let count = try rows.first?.decode(Int64.self), count >= limit {
                throw APIError(.conflict, "device_limit", field: "name",
                               "a reader has at most \(limit) devices that are not revoked; revoke one (DELETE /v1/devices/{id}) first")
            }
            return try await insertDevice(connection, reader: device.reader, name: name)
        }
    }

    private func insertDevice(_ connection: PostgresConnection, reader: UUID, name: String) async throws -> Registration {
        let id = UUID()
        let (token, hash) = Tokens.newDeviceToken(reader: reader)
        try await connection.query("""
            INSERT INTO devices (reader_id, device_id, token_hash, name)
            VALUES (\(reader), \(id), \(ByteBuffer(bytes: hash)), \(name))
            """, logger: logger)
        return Registration(reader: reader.lowercased, device: id.lowercased, token: token)
    }

    /// The device a bearer token names, if the token is well formed, known and not revoked.
    public func authenticate(token: String) async throws -> SyncDevice? {
        guard let (reader, hash) = Tokens.parse(token) else { return nil }
        if let device = tokens.device(reader: reader, hash: hash) { return device }
        let statement = AuthenticateStatement(reader: reader, hash: ByteBuffer(bytes: hash))
        let ids = try await withConnection { connection in
            var ids: [UUID] = []
            for try await id in try await connection.execute(statement, logger: logger) { ids.append(id) }
            return ids
        }
        for id in ids {
            let device = SyncDevice(reader: reader, device: id)
            tokens.insert(device, hash: hash)
            return device
        }
        return nil
    }


    /// The reader's devices.
    public func devices(of reader: UUID) async throws -> [DeviceInfo] {
        let rows = try await rows("""
            SELECT device_id, name, created_at, revoked_at FROM devices WHERE reader_id = \(reader) ORDER BY created_at
            """)
        var result: [DeviceInfo] = []
        for row in rows {
            let (id, name, created, revoked) = try row.decode((UUID, String, Date, Date?).self)
            result.append(DeviceInfo(device: id.lowercased, name: name, createdAt: created, revokedAt: revoked))
        }
        return result
    }

    /// Revokes a device of `reader`; false when the reader has no such device.
    public func revoke(device: UUID, of reader: UUID) async throws -> Bool {
        // Every server process drops the device from its token cache on the notice (this one at once).
        let rows = try await rows("""
            UPDATE devices SET revoked_at = coalesce(revoked_at, now())
            WHERE reader_id = \(reader) AND device_id = \(device)
            RETURNING device_id, pg_notify(\(Self.channel), \("r:" + reader.lowercased + ":" + device.lowercased))::text
            """)
        tokens.remove(device: device)
        return !rows.isEmpty
    }

    // MARK: Events



    /// Stores the events of `reader` that the server does not hold yet, all in one transaction,
    /// numbering them in the reader's arrival order, and notifies listeners on commit.
    ///
    /// A copy is an event ID with an origin. A copy already stored is a duplicate, skipped. Another
    /// copy of an event the reader holds (the same ID and fact, another origin: the same export
    /// imported on two devices) is stored as an *alias* row, pulled like any event, so that every
    /// device's vector moves over that replica's sequence numbers.
    ///
    /// Refuses the whole batch (409, nothing stored) when an event ID belongs to another reader or
    /// is held with another fact, or when an event's (replica, sequence) already names another
    /// event of `reader` or of one of its partners (the readers whose devices would receive both).
    public func push(reader: UUID, events: [IncomingEvent]) async throws -> PushResult {
        struct Copy: Hashable { let eventID: UUID; let replica: UUID?; let sequence: Int64 }
        var seen: Set<Copy> = []
        let unique = events.filter { seen.insert(Copy(eventID: $0.eventID, replica: $0.replica, sequence: $0.sequence)).inserted }
        // A concurrent push that committed after this statement's snapshot makes a unique index
        // refuse a row (23505): one of the same reader (it committed before the reader's row lock
        // was granted), or another reader's that claimed one of the batch's new event IDs first
        // (`event_ids`, migration 6). Nothing is stored; the statement run again sees that push
        // and answers for it (a duplicate, or 409 `event_id_taken`).
        for attempt in 1...3 {
            do {
                return try await pushOnce(reader: reader, unique, received: events.count)
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
                if attempt == 3 {
                    throw APIError(.conflict, "origin_taken", field: "events", rule: ValidationRule.duplicateID.rawValue,
                                   "a replica's sequence number in this batch already names another event of this reader")
                }
            }
        }
        preconditionFailure("unreachable: the last attempt returns or throws")
    }

    private func pushOnce(reader: UUID, _ unique: [IncomingEvent], received: Int) async throws -> PushResult {
        let ids = unique.map(\.eventID)
        // One statement (one round trip, atomic on its own). The reader's row lock orders its
        // pushes: arrivals commit in increasing order, so a cursor past arrival N never skips an
        // event that commits later with a smaller number. Each event ID is looked up among the
        // reader's own rows and in `event_ids`, which names the one reader an ID belongs to
        // (event IDs are global, and no unique index across readers can exist on the
        // reader-partitioned `events`); an ID of another reader stores nothing, and a new ID is
        // claimed there for the reader. A copy is an alias
        // when the reader holds its event ID, or an earlier row of the batch has it. The notice
        // is sent at commit, to every server process that listens.
        let replicas = unique.map { $0.replica?.lowercased ?? "" }
        let statement = PushStatement(reader: reader, ids: ids, replicas: replicas, sequences: unique.map(\.sequence),
                                      stamps: unique.map(\.stamp), occurredAt: unique.map(\.occurredAt), types: unique.map(\.type),
                                      groups: unique.map(\.group.rawValue), records: unique.map(\.record), facts: unique.map(\.fact),
                                      channel: Self.channel, payloadPrefix: "e:" + reader.lowercased + ":")
        let rows = try await withConnection { connection in
            var rows: [PushStatement.Row] = []
            for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
            return rows
        }
        var result = PushResult(stored: 0, duplicates: received, lastArrival: 0)
        for (stored, last, foreign, taken, otherFact) in rows {
            if let foreign {
                let index = unique.first { $0.eventID == foreign }?.index ?? 0
                throw APIError(.conflict, "event_id_taken", field: "events[\(index)].record.eventID",
                               "event ID \(foreign.lowercased) belongs to another reader")
            }
            if let taken, let event = unique.first(where: { $0.eventID == taken }) {
                throw APIError.originTaken(event)
            }
            if let otherFact, let event = unique.first(where: { $0.eventID == otherFact }) {
                throw APIError.otherFact(event)
            }
            result = PushResult(stored: Int(stored), duplicates: received - Int(stored), lastArrival: last)
        }
        return result
    }




    /// The readers whose events `reader`'s devices receive: itself (everything) and its partners
    /// (only the groups each partner shares), partners sorted by ID.
    public func sources(of reader: UUID) async throws -> [(reader: UUID, groups: [String]?)] {
        try await withReadConnection { connection in try await Self.sources(of: reader, on: connection, logger: logger) }
    }

    static func sources(of reader: UUID, on connection: PostgresConnection, logger: Logger) async throws -> [(reader: UUID, groups: [String]?)] {
        var result: [(reader: UUID, groups: [String]?)] = [(reader, nil)]
        let rows = try await connection.query("""
            SELECT p.partner_id, s.groups FROM partnerships p
            LEFT JOIN share_settings s ON s.reader_id = p.partner_id
            WHERE p.reader_id = \(reader) ORDER BY p.partner_id
            """, logger: logger).collect()
        for row in rows {
            let (partner, groups) = try row.decode((UUID, [String]?).self)
            result.append((partner, groups ?? ShareSettings().groups.map(\.rawValue)))
        }
        return result
    }

    /// What `reader`'s device lacks after `cursor`: its own events and what partners share, up to `limit`.
    ///
    /// A partner's position in the cursor remembers the groups it was computed with. When the
    /// partner now shares a group it did not then, that partner is pulled again from its first
    /// arrival, skipping what the device already received (events up to the old position in
    /// groups shared both before and now), so the newly shared group's earlier events arrive
    /// once. A group no longer shared is simply not pulled any more.
    ///
    /// The share settings and the events are read in one snapshot (one `REPEATABLE READ READ
    /// ONLY` transaction): a group turned off before an event was pushed never shares that event,
    /// whatever commits between the two reads (issue 39; before, each read had its own snapshot
    /// and a memo pushed after memos were turned off could reach the partner).
    public func pull(reader: UUID, after cursor: PullCursor, limit: Int) async throws -> PullPage {
        // Usually the reader's partners and their groups are those the cursor was computed with:
        // one statement (one snapshot, one round trip) reads them and the page together. The test
        // hook's pause sits between the two reads of the transaction below, so it takes that path.
        if Self.testPullPause == nil, let page = try await pullInOneStatement(reader: reader, after: cursor, limit: limit) {
            return page
        }
        return try await pullInTransaction(reader: reader, after: cursor, limit: limit)
    }

    /// The pull in one `REPEATABLE READ READ ONLY` transaction: the reader's partners and their
    /// groups, then the page computed with them.
    func pullInTransaction(reader: UUID, after cursor: PullCursor, limit: Int) async throws -> PullPage {
        let logger = logger
        let (rows, read) = try await withReadConnection { connection in
            try await connection.query("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", logger: logger)
            do {
                var cursor = cursor
                let sources = try await Self.sources(of: reader, on: connection, logger: logger)
                let scans = Self.scans(of: sources, cursor: &cursor)
                if let pause = Self.testPullPause { try await Task.sleep(for: pause) }
                // One statement: for each source (the reader, then each partner still paired, with
                // the groups read above), at most `limit` events after its position, in its
                // groups, minus what a restarted partner already delivered; the first `limit`
                // rows in (own first, partners by ID, arrival) order make the page.
                let statement = PullStatement(arguments: PullArguments(reader: reader, scans: scans, limit: Int64(limit + 1)))
                var rows: [PullStatement.Row] = []
                for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
                try await connection.query("COMMIT", logger: logger)
                return (rows, cursor)
            } catch {
                // In a task of its own: a cancelled pull (its client left) still ends the
                // transaction before the connection goes back to the pool.
                await Task { _ = try? await connection.query("ROLLBACK", logger: logger) }.value
                throw error
            }
        }
        return Self.page(rows, cursor: read, limit: limit)
    }

    /// One scan of the pull statement per source.
    typealias Scan = (reader: UUID, after: Int64, groups: String, skipThrough: Int64, skipGroups: String)

    /// The scans of a pull from `sources` (the reader, then its partners with the groups each
    /// shares now), and `cursor` made to match them: former partners dropped, a partner sharing a
    /// new group restarted (``PullCursor/rescoped(_:to:)``).
    static func scans(of sources: [(reader: UUID, groups: [String]?)], cursor: inout PullCursor) -> [Scan] {
        var scans: [Scan] = []
        // Former partners' positions go: the cursor holds the reader and its partners now.
        cursor.keep(only: Set(sources.map(\.reader)))
        for (source, groups) in sources {
            let after = cursor.positions[source] ?? 0
            guard let groups else {
                scans.append((source, after, "*", 0, ""))
                continue
            }
            let share = cursor.rescoped(source, to: Set(groups))
            // A partner none of whose events arrived yet stays in the cursor (at 0, with its
            // groups), so that the next pull knows the partners and groups it was computed with.
            if cursor.positions[source] == nil { cursor.positions[source] = 0 }
            scans.append((source, cursor.positions[source] ?? 0, share.groups.sorted().joined(separator: ","),
                          share.skipThrough, share.skipGroups.sorted().joined(separator: ",")))
        }
        return scans
    }

    /// The page of `rows` (at most `limit + 1`, in page order) after `cursor`.
    static func page(_ rows: [PullStatement.Row], cursor read: PullCursor, limit: Int) -> PullPage {
        var cursor = read
        var events: [PulledEvent] = []
        var more = false
        for (source, arrival, id, record) in rows {
            if events.count == limit { more = true; continue }
            events.append(PulledEvent(reader: source.lowercased, arrival: arrival, eventID: id.lowercased,
                                      record: Data(record.readableBytesView).base64EncodedString()))
            cursor.positions[source] = arrival
        }
        return PullPage(events: events, next: cursor.encoded, more: more)
    }

    /// The pull in one statement (``PullPageStatement``), computed with the partners and groups
    /// the cursor holds; the statement also reads the reader's partners and their groups now, in
    /// the same snapshot. When they are the cursor's, the page is exactly the one the transaction
    /// of ``pull(reader:after:limit:)`` reads; otherwise (a partner came or went, a partner's
    /// groups changed, a cursor without groups) nil, and the pull reads them first.
    func pullInOneStatement(reader: UUID, after cursor: PullCursor, limit: Int) async throws -> PullPage? {
        var expected: [UUID: Set<String>] = [:]
        for partner in Set(cursor.positions.keys).union(cursor.shares.keys) where partner != reader {
            guard let share = cursor.shares[partner] else { return nil }
            expected[partner] = share.groups
        }
        var read = cursor
        var sources: [(reader: UUID, groups: [String]?)] = [(reader, nil)]
        for (partner, groups) in expected { sources.append((partner, Array(groups))) }
        let scans = Self.scans(of: sources, cursor: &read)
        let statement = PullPageStatement(arguments: PullArguments(reader: reader, scans: scans, limit: Int64(limit + 1)))
        let logger = logger
        let rows = try await withReadConnection { connection in
            var rows: [PullPageStatement.Row] = []
            for try await row in try await connection.execute(statement, logger: logger) { rows.append(row) }
            return rows
        }
        let defaults = Set(ShareSettings().groups.map(\.rawValue))
        var current: [UUID: Set<String>] = [:]
        var events: [PullStatement.Row] = []
        for (isPartner, source, arrival, id, record, groups) in rows {
            if isPartner {
                current[source] = groups.map(Set.init) ?? defaults
            } else if let record {
                events.append((source, arrival, id, record))
            }
        }
        guard current == expected else { return nil }
        return Self.page(events, cursor: read, limit: limit)
    }

    // MARK: Partners


    /// Creates a single-use invite of `reader` valid for `seconds`; 409 `invite_limit` when the
    /// reader has `liveLimit` invites neither used nor expired (counted under the reader's row
    /// lock, so concurrent requests cannot pass it).
    public func createInvite(reader: UUID, seconds: Int, liveLimit: Int) async throws -> Invite {
        let (code, hash) = Tokens.newInviteCode()
        let rows = try await rows("""
            WITH locked AS (
                SELECT reader_id FROM readers WHERE reader_id = \(reader) FOR UPDATE
            ), live AS (
                SELECT count(*) AS n FROM invites, locked
                WHERE invites.reader_id = locked.reader_id AND used_by IS NULL AND expires_at > now()
            )
            INSERT INTO invites (reader_id, code_hash, expires_at)
            SELECT \(reader), \(ByteBuffer(bytes: hash)), now() + make_interval(secs => \(Double(seconds)))
            FROM live WHERE live.n < \(liveLimit)
            RETURNING expires_at
            """)
        guard let row = rows.first else { throw APIError.inviteLimit(liveLimit) }
        return Invite(code: code, expiresAt: try row.decode(Date.self).formatted(.iso8601))
    }

    /// Accepts an invite for `reader`: consumes it and pairs the two readers. Returns the inviter.
    /// 409 `partner_limit` (the invite stays unused) when either reader has `partnerLimit`
    /// partners already, counted under both readers' row locks (taken in reader order, so two
    /// acceptances cannot pass the limit together or deadlock).
    public func acceptInvite(code: String, reader: UUID, partnerLimit: Int) async throws -> UUID {
        let hash = ByteBuffer(bytes: Tokens.inviteHash(code))
        let inviter: UUID = try await transaction { connection in
            let rows = try await connection.query("""
                SELECT reader_id, expires_at <= now(), used_by IS NOT NULL FROM invites
                WHERE code_hash = \(hash) FOR UPDATE
                """, logger: logger)
            var found: (UUID, Bool, Bool)?
            for try await row in rows.decode((UUID, Bool, Bool).self) { found = row }
            guard let (inviter, expired, used) = found else {
                throw APIError(.notFound, "invite_not_found", field: "code", "no invite has this code")
            }
            if used { throw APIError(.gone, "invite_used", field: "code", "this invite was already accepted (single use)") }
            if expired { throw APIError(.gone, "invite_expired", field: "code", "this invite has expired") }
            if inviter == reader {
                throw APIError(.badRequest, "own_invite", field: "code", "a reader cannot accept its own invite")
            }
            let counts = try await connection.query("""
                WITH locked AS (
                    SELECT reader_id FROM readers WHERE reader_id IN (\(inviter), \(reader)) ORDER BY reader_id FOR UPDATE
                )
                SELECT locked.reader_id,
                       (SELECT count(*) FROM partnerships p WHERE p.reader_id = locked.reader_id),
                       EXISTS (SELECT 1 FROM partnerships p WHERE p.reader_id = \(reader) AND p.partner_id = \(inviter))
                FROM locked
                """, logger: logger).collect()
            for row in counts {
                let (who, partners, paired) = try row.decode((UUID, Int64, Bool).self)
                if !paired && partners >= partnerLimit { throw APIError.partnerLimit(partnerLimit, acceptor: who == reader) }
            }
            try await connection.query("""
                UPDATE invites SET used_by = \(reader), used_at = now()
                WHERE reader_id = \(inviter) AND code_hash = \(hash)
                """, logger: logger)
            try await connection.query("""
                INSERT INTO partnerships (reader_id, partner_id) VALUES (\(inviter), \(reader)), (\(reader), \(inviter))
                ON CONFLICT DO NOTHING
                """, logger: logger)
            try await notifyPartners(connection, [inviter, reader])
            return inviter
        }
        return inviter
    }


    /// The reader's partners.
    public func partners(of reader: UUID) async throws -> [Partner] {
        let rows = try await rows("SELECT partner_id, since FROM partnerships WHERE reader_id = \(reader) ORDER BY since")
        var result: [Partner] = []
        for row in rows {
            let (partner, since) = try row.decode((UUID, Date).self)
            result.append(Partner(reader: partner.lowercased, since: since))
        }
        return result
    }

    /// Ends a partnership (both directions); false when the two are not partners.
    public func endPartnership(reader: UUID, partner: UUID) async throws -> Bool {
        try await transaction { connection in
            let rows = try await connection.query("""
                DELETE FROM partnerships
                WHERE (reader_id = \(reader) AND partner_id = \(partner)) OR (reader_id = \(partner) AND partner_id = \(reader))
                RETURNING reader_id
                """, logger: logger).collect()
            if !rows.isEmpty { try await notifyPartners(connection, [reader, partner]) }
            return !rows.isEmpty
        }
    }

    /// Answers when the database does.
    public func ping() async throws {
        _ = try await rows("SELECT 1")
    }

    /// The reader's share settings (the defaults when never set).
    public func shareSettings(of reader: UUID) async throws -> ShareSettings {
        for row in try await rows("SELECT groups FROM share_settings WHERE reader_id = \(reader)") {
            return ShareSettings(groups: try row.decode([String].self))
        }
        return ShareSettings()
    }

    /// Replaces the reader's share settings; partners' devices see the change from their next pull.
    public func setShareSettings(_ settings: ShareSettings, of reader: UUID) async throws {
        try await transaction { connection in
            try await connection.query("""
                INSERT INTO share_settings (reader_id, groups) VALUES (\(reader), \(settings.groups.map(\.rawValue)))
                ON CONFLICT (reader_id) DO UPDATE SET groups = excluded.groups, updated_at = now()
                """, logger: logger)
            try await notifyPartners(connection, [reader])
        }
    }

    private func notifyPartners(_ connection: PostgresConnection, _ readers: [UUID]) async throws {
        let payload = readers.map { $0.uuidString.lowercased() }.joined(separator: ",")
        try await connection.query("SELECT pg_notify(\(Self.channel), \("p:" + payload))", logger: logger)
    }
}

/// The devices this process authenticated in the last few seconds, by reader and token hash, so
/// that a device's requests do not each look its token up in PostgreSQL. A revocation reaches
/// every process through the NOTIFY channel (``LiveHub`` drops the device), the whole cache is
/// dropped when the listening connection was lost (notices may have been missed), and an entry
/// lives at most ``lifetime`` (the bound for a revocation that races a look-up).
///
/// `@unchecked Sendable`: the dictionary is only touched under `lock`.
public final class TokenCache: @unchecked Sendable {
    /// An empty cache.
    public init() {}
    private struct Key: Hashable { let reader: UUID; let hash: [UInt8] }
    private let lock = NSLock()
    private var entries: [Key: (device: SyncDevice, expires: ContinuousClock.Instant)] = [:]
    /// How long an entry is trusted.
    public let lifetime: Duration = .seconds(10)

    /// The device of `reader`'s token with this hash, if verified within ``lifetime``.
    public func device(reader: UUID, hash: [UInt8]) -> SyncDevice? {
        lock.withLock {
            guard let entry = entries[Key(reader: reader, hash: hash)] else { return nil }
            guard entry.expires > .now else {
                entries[Key(reader: reader, hash: hash)] = nil
                return nil
            }
            return entry.device
        }
    }

    /// Remembers a verified token.
    public func insert(_ device: SyncDevice, hash: [UInt8]) {
        lock.withLock {
            if entries.count > 100_000 { entries.removeAll() }
            entries[Key(reader: device.reader, hash: hash)] = (device, .now + lifetime)
        }
    }

    /// Forgets a device's tokens (it was revoked).
    public func remove(device: UUID) {
        lock.withLock { entries = entries.filter { $0.value.device.device != device } }
    }

    /// Forgets every token.
    public func removeAll() {
        lock.withLock { entries.removeAll() }
    }
}

/// Where a device's pulls stand: for each reader it receives, the last arrival it has seen.
/// Travels as an opaque base64url string (`after=` and `next`).
///
/// One number per reader rather than one global number: arrivals are numbered per reader under
/// the reader's row lock, so they commit in order and partition by reader; a single global
/// counter would either serialize every push of every reader or let a slow transaction commit
/// behind a cursor that already passed its number (a lost event).
///
/// For a partner, the position also keeps the share groups it was computed with (``Share``), so
/// that a group the partner turns on later is pulled from the start (``rescoped(_:to:)``).
///
/// `Sendable`: a value type.
public struct PullCursor: Sendable, Hashable {
    /// The last arrival seen, by reader.
    public var positions: [UUID: Int64]
    /// For each partner, the groups its position covers and what a restart already delivered.
    public var shares: [UUID: Share]

    /// The share groups a partner's position was computed with.
    ///
    /// `Sendable`: a value type.
    public struct Share: Sendable, Hashable {
        /// The groups pulled up to the position.
        public var groups: Set<String>
        /// After a restart: the events up to this arrival in ``skipGroups`` were delivered before
        /// it (0: no restart under way).
        public var skipThrough: Int64
        /// See ``skipThrough``.
        public var skipGroups: Set<String>

        /// A share: `groups`, and a restart that delivered `skipGroups` up to `skipThrough` (0: none).
        public init(groups: Set<String>, skipThrough: Int64, skipGroups: Set<String>) {
            self.groups = groups
            self.skipThrough = skipThrough
            self.skipGroups = skipGroups
        }
    }

    /// A cursor from the given positions (empty: from the beginning).
    public init(positions: [UUID: Int64] = [:], shares: [UUID: Share] = [:]) {
        self.positions = positions
        self.shares = shares
    }

    /// The share of `partner`'s position for the groups it shares now, `current`: a group not in
    /// the position's groups restarts the partner at arrival 0, skipping the events the device
    /// received (up to the old position, in groups shared then and now); groups no longer shared
    /// are dropped. A position without groups (a cursor of an older server) counts as computed
    /// with `current`.
    public mutating func rescoped(_ partner: UUID, to current: Set<String>) -> Share {
        let after = positions[partner] ?? 0
        var share = shares[partner] ?? Share(groups: current, skipThrough: 0, skipGroups: [])
        if after >= share.skipThrough { share.skipThrough = 0; share.skipGroups = [] }
        if after > 0, !current.isSubset(of: share.groups) {
            // Delivered so far: up to `after` in the position's groups and, during an earlier
            // restart, up to its skip arrival in its skip groups (a subset of the position's).
            if share.skipThrough == 0 {
                share.skipThrough = after
                share.skipGroups = share.groups
            }
            positions[partner] = 0
        }
        share.groups = current
        share.skipGroups.formIntersection(current)
        if share.skipGroups.isEmpty { share.skipThrough = 0 }
        shares[partner] = share
        return share
    }

    /// Drops the positions of every reader but `sources` (the reader and its partners now): a
    /// former partner is never read again, so its position only grew the cursor (issue 39: past
    /// about 140 former partners the server made a cursor it then refused). A partner paired
    /// again is a new partnership: it is pulled from its first arrival, in the groups it shares
    /// now (the device skips the events it holds).
    public mutating func keep(only sources: Set<UUID>) {
        positions = positions.filter { sources.contains($0.key) }
        shares = shares.filter { sources.contains($0.key) }
    }

    /// The most bytes one reader adds to ``encoded``: a 16-byte UUID, two LEB128 numbers (at most
    /// 9 bytes each: 63 bits), a flag byte and two group masks (2 bytes each), 39 bytes in
    /// base64url (4 characters per 3 bytes). A cursor of the reader and `n` partners is at most
    /// `(n + 1) × maxEncodedBytesPerReader + 4` bytes (the version byte and the last group).
    public static let maxEncodedBytesPerReader = (16 + 9 + 1 + 2 + 9 + 2) * 4 / 3

    /// The version byte of the binary form. The earlier text form starts with a UUID's hex digit,
    /// so the two never mix.
    static let binaryVersion: UInt8 = 1

    /// Parses a cursor: the binary form ``encoded`` writes, or the earlier text form devices may
    /// still hold; nil when it is not one this server wrote (never a crash, whatever the bytes).
    public init?(encoded: String) {
        if encoded.isEmpty { self.init(); return }
        guard let bytes = Tokens.decodeBase64url(encoded), let first = bytes.first else { return nil }
        if first == Self.binaryVersion {
            self.init(binary: bytes)
        } else {
            self.init(text: bytes)
        }
    }

    /// The binary form: the version byte, then per reader (sorted) its 16 UUID bytes, its
    /// position (LEB128), and a flag: 0 for the device's own reader, 1 for a partner, followed by
    /// the groups' mask, the skip arrival (LEB128) and the skip groups' mask.
    init?(binary bytes: [UInt8]) {
        var reader = ByteReader(bytes: bytes, index: 1)
        var positions: [UUID: Int64] = [:]
        var shares: [UUID: Share] = [:]
        while !reader.atEnd {
            guard let id = reader.uuid(), positions[id] == nil, let arrival = reader.number(), let flag = reader.byte() else { return nil }
            positions[id] = arrival
            switch flag {
            case 0: break
            case 1:
                guard let groups = reader.mask(), let skip = reader.number(), let skipped = reader.mask() else { return nil }
                shares[id] = Share(groups: groups, skipThrough: skip, skipGroups: skipped)
            default: return nil
            }
        }
        self.init(positions: positions, shares: shares)
    }

    /// The earlier text form: `reader:arrival` and `reader:arrival:groups:skipThrough:skipGroups`
    /// (groups joined by `.`), comma-separated.
    init?(text bytes: [UInt8]) {
        guard let text = String(bytes: bytes, encoding: .utf8) else { return nil }
        var positions: [UUID: Int64] = [:]
        var shares: [UUID: Share] = [:]
        func groups(_ text: Substring) -> Set<String>? {
            let names = text.split(separator: ".").map(String.init)
            return names.allSatisfy { ShareGroup(rawValue: $0) != nil } ? Set(names) : nil
        }
        for part in text.split(separator: ",") {
            let fields = part.split(separator: ":", omittingEmptySubsequences: false)
            guard fields.count == 2 || fields.count == 5, let reader = UUID(uuidString: String(fields[0])),
                  let arrival = Int64(fields[1]), arrival >= 0 else { return nil }
            positions[reader] = arrival
            if fields.count == 5 {
                guard let shared = groups(fields[2]), let skip = Int64(fields[3]), skip >= 0, let skipped = groups(fields[4]) else { return nil }
                shares[reader] = Share(groups: shared, skipThrough: skip, skipGroups: skipped)
            }
        }
        self.init(positions: positions, shares: shares)
    }

    /// The opaque form (base64url of the binary form, see ``init(binary:)``): at most
    /// ``maxEncodedBytesPerReader`` bytes per reader, whatever the numbers and groups, so a
    /// cursor of the reader and its partners (at most ``ServerLimits/maxPartners``) always fits
    /// ``ServerLimits/maxCursorBytes`` and parses again.
    public var encoded: String {
        var bytes: [UInt8] = [Self.binaryVersion]
        for (reader, arrival) in positions.sorted(by: { $0.key.uuidString < $1.key.uuidString }) {
            withUnsafeBytes(of: reader.uuid) { bytes.append(contentsOf: $0) }
            ByteReader.append(arrival, to: &bytes)
            if let share = shares[reader] {
                bytes.append(1)
                ByteReader.append(mask: share.groups, to: &bytes)
                ByteReader.append(share.skipThrough, to: &bytes)
                ByteReader.append(mask: share.skipGroups, to: &bytes)
            } else {
                bytes.append(0)
            }
        }
        return Tokens.base64url(bytes)
    }
}

/// Reads the binary cursor form; every read returns nil past the end or on a value out of range.
///
/// `Sendable`: a value type.
struct ByteReader: Sendable {
    let bytes: [UInt8]
    var index: Int

    var atEnd: Bool { index >= bytes.count }

    mutating func byte() -> UInt8? {
        guard index < bytes.count else { return nil }
        defer { index += 1 }
        return bytes[index]
    }

    mutating func uuid() -> UUID? {
        guard bytes.count - index >= 16 else { return nil }
        let b = Array(bytes[index..<index + 16])
        index += 16
        return UUID(uuid: (b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]))
    }

    /// An unsigned LEB128 number in 0 ... Int64.max, in its shortest form (no trailing zero groups).
    mutating func number() -> Int64? {
        var value: UInt64 = 0
        for shift in stride(from: 0, to: 63, by: 7) {
            guard let byte = byte() else { return nil }
            let bits = UInt64(byte & 0x7f)
            // The ninth group (shift 56) holds the last 7 bits of an Int64: no continuation.
            if shift == 56, byte & 0x80 != 0 { return nil }
            value |= bits << UInt64(shift)
            if byte & 0x80 == 0 {
                if byte == 0, shift > 0 { return nil }
                return Int64(value)
            }
        }
        return nil
    }

    /// A set of share groups as a 16-bit mask (little-endian); nil for a bit no group has.
    mutating func mask() -> Set<String>? {
        guard let low = byte(), let high = byte() else { return nil }
        let mask = UInt16(low) | UInt16(high) << 8
        var groups: Set<String> = []
        for group in ShareGroup.allCases where mask & Self.bit(group) != 0 { groups.insert(group.rawValue) }
        let known = ShareGroup.allCases.reduce(UInt16(0)) { $0 | Self.bit($1) }
        return mask & ~known == 0 ? groups : nil
    }

    /// The bit of a group in the cursor: fixed here, whatever the order of `ShareGroup`'s cases.
    static func bit(_ group: ShareGroup) -> UInt16 {
        switch group {
        case .books: return 1 << 0
        case .profile: return 1 << 1
        case .progress: return 1 << 2
        case .goals: return 1 << 3
        case .finishes: return 1 << 4
        case .ratings: return 1 << 5
        case .sentences: return 1 << 6
        case .memos: return 1 << 7
        case .privateOnly: return 1 << 8
        }
    }

    static func append(_ number: Int64, to bytes: inout [UInt8]) {
        var value = UInt64(max(number, 0))
        repeat {
            let low = UInt8(value & 0x7f)
            value >>= 7
            bytes.append(value == 0 ? low : low | 0x80)
        } while value != 0
    }

    /// Groups that are not share groups (none reach a cursor: they come from parsed cursors and
    /// `share_settings`, both checked) have no bit.
    static func append(mask groups: Set<String>, to bytes: inout [UInt8]) {
        let mask = groups.compactMap(ShareGroup.init(rawValue:)).reduce(UInt16(0)) { $0 | bit($1) }
        bytes.append(UInt8(mask & 0xff))
        bytes.append(UInt8(mask >> 8))
    }
}

extension UUID {
    /// The lowercase form every response uses.
    var lowercased: String { uuidString.lowercased() }
}

/// When a pool last handed a connection out (``PostgresSyncStore/withConnection(on:_:)``).
///
/// `@unchecked Sendable`: `last` is only touched under `lock`.
final class PoolProgress: @unchecked Sendable {
    private let lock = NSLock()
    private var last: ContinuousClock.Instant?

    /// Records that a request got its connection, now.
    func handedOut() { lock.withLock { last = .now } }

    /// When the pool last handed a connection out; `nil` before the first.
    var lastHandedOut: ContinuousClock.Instant? { lock.withLock { last } }
}

/// What ended first in ``PostgresSyncStore/withConnection(reading:_:)``: the work, or the acquire timer.
enum AcquireOutcome<R: Sendable>: Sendable { case done(R), timerEnded }

/// The one outcome of ``PostgresSyncStore/withConnection(on:_:)``: the work's, the timer's or a
/// cancellation, whichever comes first; the others are dropped.
///
/// `@unchecked Sendable`: every property is only touched under `lock`.
final class Outcome<R: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<R, any Error>?
    private var pending: Result<R, any Error>?
    private var done = false
    private var work: Task<Void, Never>?
    private var timer: Task<Void, any Error>?
    private var acquiredAt: ContinuousClock.Instant?

    /// Records that the work got its connection, now, and replaces the acquire timer with the
    /// statement timer that `makeTimer` starts. False, and nothing changes, when the outcome is
    /// settled already (the request was answered, or cancelled): the work must not run then.
    func acquired(statementTimer makeTimer: () -> Task<Void, any Error>) -> Bool {
        let (recorded, old): (Bool, Task<Void, any Error>?) = lock.withLock {
            guard !done else { return (false, nil) }
            guard acquiredAt == nil else { return (true, nil) }
            acquiredAt = .now
            let old = timer
            timer = makeTimer()
            return (true, old)
        }
        old?.cancel()
        return recorded
    }

    /// The continuation to resume and the tasks to cancel; resumes at once when an outcome came first.
    func start(_ continuation: CheckedContinuation<R, any Error>, work: Task<Void, Never>, timer: Task<Void, any Error>) {
        let (early, acquiredFirst): (Result<R, any Error>?, Bool) = lock.withLock {
            self.work = work
            // The statement timer runs already when the connection came before this.
            let acquiredFirst = acquiredAt != nil
            if !acquiredFirst { self.timer = timer }
            if let pending { self.pending = nil; return (pending, acquiredFirst) }
            self.continuation = continuation
            return (nil, acquiredFirst)
        }
        if acquiredFirst || early != nil { timer.cancel() }
        if let early {
            if case .failure = early { work.cancel() }
            continuation.resume(with: early)
        }
    }

    /// Settles the outcome; false when it was settled already (or, `unlessAcquired`, when the work
    /// has its connection).
    @discardableResult
    func finish(_ result: Result<R, any Error>, unlessAcquired: Bool = false) -> Bool {
        let (first, continuation, work, timer): (Bool, CheckedContinuation<R, any Error>?, Task<Void, Never>?, Task<Void, any Error>?) = lock.withLock {
            guard !done, !(unlessAcquired && acquiredAt != nil) else { return (false, nil, nil, nil) }
            done = true
            let taken = self.continuation
            self.continuation = nil
            if taken == nil { pending = result }
            return (true, taken, self.work, self.timer)
        }
        guard first else { return false }
        timer?.cancel()
        if case .failure = result { work?.cancel() }
        continuation?.resume(with: result)
        return true
    }
}

/// What a server process knows of its read replica: whether pulls may read there.
///
/// `@unchecked Sendable`: every property is only touched under `lock`.
final class ReplicaState: @unchecked Sendable {
    private let lock = NSLock()
    private var avoidUntil: ContinuousClock.Instant?
    private var nextProbe: ContinuousClock.Instant?

    /// Whether pulls read from the replica now.
    var usable: Bool { lock.withLock { avoidUntil.map { $0 <= .now } ?? true } }

    /// Whether the lag is to be probed now (at most once a second, or once per retry spell after
    /// the replica did not answer); claims the probe.
    func probeDue() -> Bool {
        lock.withLock {
            if let nextProbe, nextProbe > .now { return false }
            nextProbe = .now + .seconds(1)
            return true
        }
    }

    /// The probe's answer: `lag` nil when the replica did not answer.
    func probed(lag: Duration?, bound: Duration, retry: Duration) {
        lock.withLock {
            if let lag, lag <= bound {
                avoidUntil = nil
            } else {
                avoidUntil = .now + (lag == nil ? retry : .seconds(1))
                if lag == nil { nextProbe = .now + retry }
            }
        }
    }

    /// A read on the replica failed.
    func failed(retry: Duration) {
        lock.withLock {
            avoidUntil = .now + retry
            nextProbe = .now + retry
        }
    }
}

