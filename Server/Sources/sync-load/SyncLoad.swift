// sync-load: many simulated devices against the real sync server on loopback, pushing and
// pulling small batches for a bounded time; then PostgreSQL's own insert rate for the same rows
// (the server's ceiling), measured in the same run on the same database. Prints both and the ratio.
//
//   sync-load --server http://127.0.0.1:8080 --database-url postgres://... [--devices 1000] [--seconds 20]
//
// Server/Scripts/bench.sh starts a throwaway PostgreSQL and the server, and runs this.
import ArgumentParser
import AsyncHTTPClient
import DemoHistory
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import PostgresNIO
import ReadingEvents

@main
struct SyncLoad: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync-load",
        abstract: "Load benchmark of the sync server beside PostgreSQL's own insert rate, in one run.")

    @Option(help: "The server's base URL.") var server: String
    @Option(name: .customLong("database-url"), help: "The server's database (for the ceiling; default $DATABASE_URL).")
    var databaseURL: String?
    @Option(help: "Simulated devices (one reader each).") var devices: Int = 1000
    @Option(help: "Seconds of load.") var seconds: Int = 20
    @Option(name: .customLong("first-seconds"),
            help: "The first seconds of the load, reported apart from the rest (a fresh database before autovacuum's first ANALYZE).")
    var firstSeconds: Int = 30
    @Option(help: "Events per push.") var batch: Int = 10
    @Option(name: .customLong("ceiling-connections"), help: "Connections of the PostgreSQL ceiling run.")
    var ceilingConnections: Int = 20
    @Option(name: .customLong("server-pid"), help: "The server's process ID: its CPU seconds per 1,000 events (from /proc).")
    var serverPID: Int32?
    @Flag(name: .customLong("separate-pull"), help: "Push, then pull in a second request (the old cycle); default: push with pull=1.")
    var separatePull = false

    func run() async throws {
        guard let url = databaseURL ?? ProcessInfo.processInfo.environment["DATABASE_URL"] else {
            throw ValidationError("--database-url or DATABASE_URL is required")
        }
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = devices
        configuration.timeout.connect = .seconds(30)
        let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)

        let templates = DemoHistory.generate(DemoHistory.Options(readers: 1, days: 60, seed: 42))
        print("sync-load: \(devices) devices, \(seconds) s, \(batch) events per push, server \(server)")

        // Register every device (its own reader).
        let registered = try await withThrowingTaskGroup(of: (UUID, String).self) { group in
            var result: [(UUID, String)] = []
            var next = 0
            func add() {
                let reader = UUID()
                group.addTask {
                    let reply = try await send(http, .POST, server + "/v1/devices", token: nil,
                                               body: Data("{\"reader\":\"\(reader)\",\"name\":\"load\"}".utf8))
                    guard reply.status == 201, let token = (try JSONSerialization.jsonObject(with: reply.body) as? [String: Any])?["token"] as? String
                    else { throw ValidationError("register: \(reply.status)") }
                    return (reader, token)
                }
            }
            while next < min(devices, 64) { add(); next += 1 }
            while let item = try await group.next() {
                result.append(item)
                if next < devices { add(); next += 1 }
            }
            return result
        }

        // The load: each device pushes a batch, then pulls what it lacks, until the deadline.
        let deadline = ContinuousClock.now + .seconds(seconds)
        let started = ContinuousClock.now
        let serverCPUBefore = serverPID.flatMap(cpuSeconds(pid:))
        let postgresCPUBefore = postgresCPUSeconds()
        let results = try await withThrowingTaskGroup(of: DeviceResult.self) { group in
            for (index, (reader, token)) in registered.enumerated() {
                group.addTask {
                    var result = DeviceResult()
                    var cursor = ""
                    var position = index * 7
                    // Each device is one replica: its events carry an origin, as every receiver requires.
                    let replica = ReplicaID(UUID())
                    var sequence: UInt64 = 0
                    while ContinuousClock.now < deadline {
                        var records: [String] = []
                        for _ in 0..<batch {
                            let template = templates[position % templates.count]
                            position += 1
                            sequence += 1
                            let envelope = EventEnvelope(eventID: EventID(), reader: ReaderID(reader),
                                                         occurredAt: template.occurredAt, timeZone: template.timeZone,
                                                         recordedAt: template.recordedAt, event: template.event,
                                                         origin: EventOrigin(stamp: UInt64(clamping: template.recordedAt.microseconds),
                                                                             replica: replica, sequence: sequence))
                            records.append(Data(BinaryEventCodec.encodeRecord(envelope)).base64EncodedString())
                        }
                        let body = Data(("{\"events\":[" + records.map { "{\"record\":\"\($0)\"}" }.joined(separator: ",") + "]}").utf8)
                        let pushStart = ContinuousClock.now
                        let query = separatePull ? "" : "?pull=1&limit=100" + (cursor.isEmpty ? "" : "&after=\(cursor)")
                        let push = try await send(http, .POST, server + "/v1/events" + query, token: token, body: body)
                        result.push.append(ContinuousClock.now - pushStart)
                        result.pushes.append(PushSample(start: pushStart - started, latency: ContinuousClock.now - pushStart,
                                                        status: push.status, events: batch))
                        guard push.status == 200 else { result.errors += 1; continue }
                        result.stored += batch
                        if !separatePull {
                            guard let json = try JSONSerialization.jsonObject(with: push.body) as? [String: Any],
                                  let page = json["page"] as? [String: Any] else { result.errors += 1; continue }
                            cursor = page["next"] as? String ?? cursor
                            result.pulled += (page["events"] as? [Any])?.count ?? 0
                            continue
                        }
                        let pullStart = ContinuousClock.now
                        let pull = try await send(http, .GET, server + "/v1/events?limit=100" + (cursor.isEmpty ? "" : "&after=\(cursor)"),
                                                  token: token, body: nil)
                        result.pull.append(ContinuousClock.now - pullStart)
                        guard pull.status == 200,
                              let json = try JSONSerialization.jsonObject(with: pull.body) as? [String: Any] else { result.errors += 1; continue }
                        cursor = json["next"] as? String ?? cursor
                        result.pulled += (json["events"] as? [Any])?.count ?? 0
                    }
                    return result
                }
            }
            var all: [DeviceResult] = []
            for try await result in group { all.append(result) }
            return all
        }
        let elapsed = ContinuousClock.now - started
        let elapsedSeconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let stored = results.reduce(0) { $0 + $1.stored }
        let pulled = results.reduce(0) { $0 + $1.pulled }
        let errors = results.reduce(0) { $0 + $1.errors }
        let pushes = results.flatMap(\.push).sorted()
        let pulls = results.flatMap(\.pull).sorted()
        let serverRate = Double(stored) / elapsedSeconds
        let serverCPU = cpuDelta(from: serverCPUBefore, to: serverPID.flatMap(cpuSeconds(pid:)))
        let postgresCPU = cpuDelta(from: postgresCPUBefore, to: postgresCPUSeconds())

        // The ceiling: the same rows (same sizes, same batch) straight into a copy of the events
        // table, one multi-row INSERT per batch in its own transaction, over a pool.
        let ceilingCPUBefore = postgresCPUSeconds()
        let ceiling = try await measureCeiling(url: url, rows: stored, batch: batch, templates: templates)
        let ceilingCPU = cpuDelta(from: ceilingCPUBefore, to: postgresCPUSeconds())
        try await http.shutdown()

        func ms(_ d: Duration) -> String { String(format: "%.1f ms", Double(d.components.attoseconds) / 1e15 + Double(d.components.seconds) * 1000) }
        func p(_ values: [Duration], _ q: Double) -> Duration { values.isEmpty ? .zero : values[min(values.count - 1, Int(Double(values.count) * q))] }
        print("devices                         \(registered.count)")
        print("load time                       \(String(format: "%.1f", elapsedSeconds)) s")
        print("pushes / pulls                  \(pushes.count) / \(pulls.count)  (errors \(errors))")
        print("events stored via server        \(stored)  (\(String(format: "%.0f", serverRate)) events/s)")
        print("events pulled                   \(pulled)")
        print("push latency p50 / p99          \(ms(p(pushes, 0.5))) / \(ms(p(pushes, 0.99)))")
        print("pull latency p50 / p99          \(ms(p(pulls, 0.5))) / \(ms(p(pulls, 0.99)))")
        print("PostgreSQL ceiling (same rows)  \(String(format: "%.0f", ceiling)) events/s  (INSERT of \(batch) rows per transaction, \(ceilingConnections) connections)")
        // The first seconds apart from the rest: a fresh database is measured in its first state.
        let samples = results.flatMap(\.pushes)
        let first = Duration.seconds(firstSeconds)
        for (name, window, length) in [("first \(firstSeconds) s", samples.filter { $0.start < first }, min(Double(firstSeconds), elapsedSeconds)),
                                       ("after \(firstSeconds) s", samples.filter { $0.start >= first }, elapsedSeconds - Double(firstSeconds))]
        where length > 0 {
            let ok = window.filter { $0.status == 200 }
            let latencies = window.map(\.latency).sorted()
            let label = name.padding(toLength: 32, withPad: " ", startingAt: 0)
            print("\(label)\(String(format: "%.0f", Double(ok.reduce(0) { $0 + $1.events }) / length)) events/s, "
                  + "\(window.count) pushes, \(window.filter { $0.status == 503 }.count) answered 503, "
                  + "\(window.count - ok.count - window.filter { $0.status == 503 }.count) other errors, "
                  + "push p50 / p99 \(ms(p(latencies, 0.5))) / \(ms(p(latencies, 0.99)))")
        }
        print("ratio server / ceiling          \(String(format: "%.2f", serverRate / ceiling))x  (target >= 0.5x)")
        func perThousand(_ seconds: Double?) -> String { seconds.map { String(format: "%.3f s", $0 / Double(max(stored, 1)) * 1000) } ?? "n/a" }
        print("cycle                           \(separatePull ? "push, then pull (2 requests)" : "push with pull=1 (1 request)")")
        print("server CPU per 1,000 events     \(perThousand(serverCPU))  (/proc/\(serverPID.map(String.init) ?? "?")/stat, user + system)")
        print("PostgreSQL CPU per 1,000 events \(perThousand(postgresCPU))  (every postgres process, during the load)")
        print("PostgreSQL CPU per 1,000 rows   \(perThousand(ceilingCPU))  (during the ceiling run)")
        if let serverCPU, let ceilingCPU, ceilingCPU > 0 {
            print("server CPU / PostgreSQL CPU     \(String(format: "%.2f", serverCPU / ceilingCPU))  (per event through the server / per row inserted alone)")
        }
    }

    func measureCeiling(url: String, rows: Int, batch: Int, templates: [EventEnvelope]) async throws -> Double {
        var logger = Logger(label: "sync-load")
        logger.logLevel = .warning
        let configuration = try postgresURL(url)
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            defer { group.cancelAll() }
            try await client.query("DROP TABLE IF EXISTS ceiling_events")
            try await client.query("CREATE TABLE ceiling_events (LIKE events INCLUDING ALL)")
            try await client.query("CREATE INDEX ON ceiling_events (event_id)")
            let total = max(rows, batch * ceilingConnections * 20)
            let reader = UUID()
            let record = ByteBuffer(bytes: BinaryEventCodec.encodeRecord(templates[0]))
            let start = ContinuousClock.now
            try await withThrowingTaskGroup(of: Void.self) { workers in
                for worker in 0..<ceilingConnections {
                    workers.addTask {
                        var arrival = Int64(worker) * 1_000_000_000
                        var done = worker * batch
                        while done < total {
                            let arrivals = (0..<batch).map { arrival + Int64($0) + 1 }
                            arrival += Int64(batch)
                            let ids = (0..<batch).map { _ in UUID() }
                            let records = [ByteBuffer](repeating: record, count: batch)
                            let dates = [Date](repeating: Date(), count: batch)
                            let types = [String](repeating: "PagesRead", count: batch)
                            let groups = [String](repeating: "progress", count: batch)
                            let zero = [Int64](repeating: 0, count: batch)
                            try await client.query("""
                                INSERT INTO ceiling_events (reader_id, arrival, event_id, sequence, occurred_at, type, share_group, record)
                                SELECT \(reader), a, e, s, o, t, g, b FROM unnest(\(arrivals)::bigint[], \(ids)::uuid[], \(zero)::bigint[],
                                    \(dates)::timestamptz[], \(types)::text[], \(groups)::text[], \(records)::bytea[]) AS u(a, e, s, o, t, g, b)
                                """)
                            done += batch * ceilingConnections
                        }
                    }
                }
                try await workers.waitForAll()
            }
            let elapsed = ContinuousClock.now - start
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            try await client.query("DROP TABLE ceiling_events")
            return Double(total) / seconds
        }
    }
}

/// One push: when it started (from the start of the load), how long it took, the answer's status.
struct PushSample: Sendable {
    let start: Duration
    let latency: Duration
    let status: Int
    let events: Int
}

struct DeviceResult: Sendable {
    var push: [Duration] = []
    var pushes: [PushSample] = []
    var pull: [Duration] = []
    var stored = 0
    var pulled = 0
    var errors = 0
}

struct Reply: Sendable {
    let status: Int
    let body: Data
}

func send(_ http: HTTPClient, _ method: HTTPMethod, _ url: String, token: String?, body: Data?) async throws -> Reply {
    var request = HTTPClientRequest(url: url)
    request.method = method
    if let token { request.headers.add(name: "Authorization", value: "Bearer \(token)") }
    if let body {
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: body))
    }
    let response = try await http.execute(request, timeout: .seconds(60))
    let buffer = try await response.body.collect(upTo: 16 * 1024 * 1024)
    return Reply(status: Int(response.status.code), body: Data(buffer.readableBytesView))
}

/// A libpq-style URL (postgres://user@host:port/db) as PostgresNIO's configuration, TLS off (loopback).
func postgresURL(_ text: String) throws -> PostgresClient.Configuration {
    guard let url = URLComponents(string: text), let host = url.host else { throw ValidationError("--database-url: not a URL") }
    var configuration = PostgresClient.Configuration(
        host: host, port: url.port ?? 5432, username: url.user ?? "postgres", password: url.password,
        database: url.path.isEmpty ? nil : String(url.path.dropFirst()), tls: .disable)
    configuration.options.maximumConnections = 64
    return configuration
}

/// User plus system CPU seconds of process `pid` (fields 14 and 15 of /proc/<pid>/stat, in clock
/// ticks); nil when it cannot be read.
func cpuSeconds(pid: Int32) -> Double? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = text.lastIndex(of: ")") else { return nil }
    // Fields after the command name (which may hold spaces): state is field 3.
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
    return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
}

/// CPU seconds of every process named `postgres` (the PostgreSQL server and its backends), or nil
/// when /proc cannot be read. Backends that exit between two readings take their time with them,
/// so this is a lower bound when connections come and go.
func postgresCPUSeconds() -> Double? {
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
    var total = 0.0
    for entry in entries {
        guard let pid = Int32(entry),
              let name = try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8),
              name.trimmingCharacters(in: .whitespacesAndNewlines) == "postgres",
              let seconds = cpuSeconds(pid: pid) else { continue }
        total += seconds
    }
    return total
}

/// `to - from`, when both were read.
func cpuDelta(from start: Double?, to end: Double?) -> Double? {
    guard let start, let end else { return nil }
    return end - start
}
