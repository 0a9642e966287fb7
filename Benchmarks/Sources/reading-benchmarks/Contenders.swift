// The three contenders: the ReadingStore, raw LMDB (the ceiling) and SQLite through GRDB (the
// baseline a Swift developer would otherwise write), plus the realistic event source.
import DemoHistory
@_spi(Benchmarks) import EventStoreLMDB
import Foundation
import GRDB
import Projections
import ReadingEvents

// MARK: Events

/// The generator's realistic mix, produced in batches of readers (so 10M events never sit in
/// memory at once): `body` gets consecutive batches whose sizes add up to exactly `total`.
func demoEvents(total: Int, readersPerBatch: Int = 40, days: Int = 365, seed: UInt64 = 20_261_121,
                _ body: ([EventEnvelope]) throws -> Void) rethrows {
    var produced = 0
    var firstReader = 0
    while produced < total {
        var batch = DemoHistory.generate(.init(readers: readersPerBatch, days: days, seed: seed, firstReaderIndex: firstReader))
        firstReader += readersPerBatch
        if batch.count > total - produced { batch.removeLast(batch.count - (total - produced)) }
        produced += batch.count
        try body(batch)
    }
}

func demoEvents(count: Int) -> [EventEnvelope] {
    var all: [EventEnvelope] = []
    all.reserveCapacity(count)
    demoEvents(total: count) { all.append(contentsOf: $0) }
    return all
}

let smallMap = LMDBEnvironmentOptions(mapSize: 1 << 30)
let bigMap = LMDBEnvironmentOptions(mapSize: 1 << 36)

// MARK: The store

func openStore(_ dir: URL, options: LMDBEnvironmentOptions = smallMap) throws -> ReadingStore {
    try ReadingStore.open(at: dir, options: options)
}

/// Appends `events` in `appendRecorded` chunks of `chunk` events (each one durable transaction).
func appendChunks(_ store: ReadingStore, _ events: [EventEnvelope], chunk: Int = 1000) throws {
    var start = 0
    while start < events.count {
        let end = min(events.count, start + chunk)
        try store.appendRecorded(Array(events[start..<end]))
        start = end
    }
}

// MARK: Raw LMDB

/// One environment, one named database, big-endian UInt64 keys, the store's own record bytes.
final class RawLMDB {
    let environment: LMDBEnvironment
    let events: LMDBDatabase<BigEndianUInt64, RawBytes>
    var next: UInt64 = 1

    init(_ dir: URL, options: LMDBEnvironmentOptions = smallMap) throws {
        environment = try LMDBEnvironment(directory: dir, options: options)
        events = try environment.openDatabase(named: "events", keys: BigEndianUInt64.self, values: RawBytes.self)
    }

    /// `records` in transactions of `chunk` puts with MDB_APPEND, each committed durably.
    func put(_ records: [[UInt8]], chunk: Int) throws {
        var start = 0
        while start < records.count {
            let end = min(records.count, start + chunk)
            try environment.write { txn in
                for i in start..<end {
                    try txn.put(events, next + UInt64(i - start), records[i], flags: .append)
                }
            }
            next += UInt64(end - start)
            start = end
        }
    }

    /// A cursor scan of every record; returns the number of bytes seen.
    func scan() throws -> (count: Int, bytes: Int) {
        var count = 0, bytes = 0
        try environment.read { txn in
            try txn.forEach(events) { _, value in count += 1; bytes += value.count; return true }
        }
        return (count, bytes)
    }
}

/// The exact stored record bytes of a store's log (to feed raw LMDB the same puts).
func storedRecords(of store: ReadingStore) throws -> [[UInt8]] {
    let env = store.environment
    let db = try env.openDatabase(named: "events", keys: BigEndianUInt64.self, values: RawBytes.self, create: false)
    var records: [[UInt8]] = []
    try env.read { txn in
        try txn.forEach(db) { _, value in records.append(value); return true }
    }
    return records
}

// MARK: SQLite (GRDB)

/// One table of JSON-encoded events in WAL mode with `synchronous = FULL` (a commit is durable,
/// as an LMDB commit is), the same indexes the log keeps (event ID, stream + version), and the
/// views folded in memory by the same `ReadingProjector` into an `InMemoryViewStore`.
final class SQLiteBaseline: @unchecked Sendable {
    let pool: DatabasePool
    let path: String
    private let lock = NSLock()
    private(set) var views = InMemoryViewStore()
    let projector = ReadingProjector()
    /// The next position (assigned inside the serialized write transaction, so the JSON line
    /// carries the same position and stream version as the row).
    private var nextPosition: Int64 = 1

    init(_ dir: URL) throws {
        path = dir.appendingPathComponent("events.sqlite").path
        pool = try DatabasePool(path: path, configuration: Configuration())
        // GRDB opens WAL pools with synchronous = NORMAL (commits not fsynced) after any
        // prepareDatabase hook; set FULL on the one writer connection so each commit is durable.
        try pool.writeWithoutTransaction { try $0.execute(sql: "PRAGMA synchronous = FULL") }
        try pool.write { db in
            try db.execute(sql: """
                CREATE TABLE IF NOT EXISTS events (
                  position INTEGER PRIMARY KEY,
                  event_id BLOB NOT NULL UNIQUE,
                  stream TEXT NOT NULL,
                  stream_version INTEGER NOT NULL,
                  json TEXT NOT NULL,
                  UNIQUE (stream, stream_version))
                """)
            nextPosition = try Int64.fetchOne(db, sql: "SELECT COALESCE(MAX(position), 0) + 1 FROM events") ?? 1
        }
    }

    /// Inserts one event (next stream version from the index, JSON line as text); returns it
    /// with its position and version set.
    func insert(_ db: Database, _ envelope: EventEnvelope) throws -> EventEnvelope {
        var e = envelope
        let stream = e.stream.description
        let version = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT MAX(stream_version) FROM events WHERE stream = ?"), arguments: [stream]) ?? 0
        e.streamVersion = UInt64(version + 1)
        e.position = UInt64(nextPosition)
        try db.cachedStatement(sql: "INSERT INTO events (position, event_id, stream, stream_version, json) VALUES (?, ?, ?, ?, ?)")
            .execute(arguments: [nextPosition, Data(e.eventID.bytes), stream, version + 1, String(decoding: JSONEventCodec.encode(e), as: UTF8.self)])
        nextPosition += 1
        return e
    }

    /// `PRAGMA synchronous` as the writer connection sees it (2 = FULL).
    func synchronousMode() throws -> Int { try pool.write { try Int.fetchOne($0, sql: "PRAGMA synchronous") ?? -1 } }

    /// Folds committed events into the in-memory views.
    func fold(_ events: [EventEnvelope]) throws {
        lock.lock(); defer { lock.unlock() }
        for e in events { try projector.apply(e, to: &views) }
    }

    /// `events` in transactions of `chunk` rows, each folded after its commit.
    func append(_ events: [EventEnvelope], chunk: Int) throws {
        var start = 0
        while start < events.count {
            let end = min(events.count, start + chunk)
            let inserted = try pool.write { db in try events[start..<end].map { try insert(db, $0) } }
            try fold(inserted)
            start = end
        }
    }

    /// The SQLite rebuild: read every row, decode its JSON, fold into fresh in-memory views.
    func rebuild() throws -> Int {
        var fresh = InMemoryViewStore()
        let projector = ReadingProjector()
        var count = 0
        try pool.read { db in
            let rows = try String.fetchCursor(db, sql: "SELECT json FROM events ORDER BY position")
            while let line = try rows.next() {
                try projector.apply(try JSONEventCodec.decode(line), to: &fresh)
                count += 1
            }
        }
        lock.lock(); views = fresh; lock.unlock()
        return count
    }
}
