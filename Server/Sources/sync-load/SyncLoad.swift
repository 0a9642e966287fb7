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
    @Option(help: "Events per push; a comma-separated list runs one load per size, each beside PostgreSQL's insert of its rows.")
    var batch: String = "100,10"
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

        // One load per batch size, each beside PostgreSQL's own insert of the same rows (in the
        // same run, on the same database): the first load meets a fresh database.
        // Each device keeps its cursor from one load to the next.
        var cursors = [String](repeating: "", count: registered.count)
        for (phase, batch) in batches.enumerated() {
            if phase > 0 { print("") }
            cursors = try await load(http: http, registered: registered, cursors: cursors, templates: templates, batch: batch,
                                     url: url, fresh: phase == 0)
        }
        try await http.shutdown()
    }

    /// Events per push, in the order the loads run.
    var batches: [Int] {
        batch.split(separator: ",").compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }.filter { $0 > 0 }
    }

    func validate() throws {
        guard !batches.isEmpty, batches.count == batch.split(separator: ",").count else {
            throw ValidationError("--batch: a comma-separated list of positive integers (got \(batch))")
        }
    }

    /// One load of `seconds` with `batch` events per push, then the ceiling for the same rows; prints
    /// both and returns each device's cursor.
    func load(http: HTTPClient, registered: [(UUID, String)], cursors: [String], templates: [EventEnvelope], batch: Int,
              url: String, fresh: Bool) async throws -> [String] {
        print("load: \(registered.count) devices, \(seconds) s, \(batch) events per push")
        let deadline = ContinuousClock.now + .seconds(seconds)
        let started = ContinuousClock.now
        let cpuBefore = CPUSplit.read(serverPID: serverPID)
        let results = try await withThrowingTaskGroup(of: DeviceResult.self) { group in
            for (index, (reader, token)) in registered.enumerated() {
                group.addTask {
                    var result = DeviceResult(index: index)
                    var cursor = cursors[index]
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
                        guard push.status == 200 else {
                            result.errors += 1
                            // A refusal that names a wait (503 busy, 429) is waited out, as the
                            // library's sync client does, instead of hammering the server at once.
                            if let seconds = push.retryAfter {
                                let resume = min(deadline, ContinuousClock.now + .seconds(seconds))
                                try? await Task.sleep(until: resume, clock: .continuous)
                            }
                            continue
                        }
                        result.stored += batch
                        if !separatePull {
                            guard let json = try JSONSerialization.jsonObject(with: push.body) as? [String: Any] else { result.errors += 1; continue }
                            if let page = json["page"] as? [String: Any] {
                                cursor = page["next"] as? String ?? cursor
                                result.pulled += (page["events"] as? [Any])?.count ?? 0
                                continue
                            }
                            // Stored, but answered without a page (the server could not read one):
                            // the device pulls apart, as the library's sync client does.
                            result.pagelessPushes += 1
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
                    result.cursor = cursor
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
        let pageless = results.reduce(0) { $0 + $1.pagelessPushes }
        let pushes = results.flatMap(\.push).sorted()
        let pulls = results.flatMap(\.pull).sorted()
        let serverRate = Double(stored) / elapsedSeconds
        let loadCPU = CPUSplit.read(serverPID: serverPID) - cpuBefore

        // The ceiling: the same rows (same sizes, same batch) straight into a copy of the events
        // table, one multi-row INSERT per batch in its own transaction, over a pool.
        let ceilingCPUBefore = CPUSplit.read(serverPID: serverPID)
        let (ceiling, ceilingRows) = try await measureCeiling(url: url, rows: stored, batch: batch, templates: templates)
        let ceilingCPU = CPUSplit.read(serverPID: serverPID) - ceilingCPUBefore

        func ms(_ d: Duration) -> String { String(format: "%.1f ms", Double(d.components.attoseconds) / 1e15 + Double(d.components.seconds) * 1000) }
        func p(_ values: [Duration], _ q: Double) -> Duration { values.isEmpty ? .zero : values[min(values.count - 1, Int(Double(values.count) * q))] }
        print("devices                         \(registered.count)")
        print("load time                       \(String(format: "%.1f", elapsedSeconds)) s")
        print("pushes / pulls                  \(pushes.count) / \(pulls.count)  (errors \(errors))")
        print("events stored via server        \(stored)  (\(String(format: "%.0f", serverRate)) events/s)")
        print("events pulled                   \(pulled)" + (pageless == 0 ? "" : "  (\(pageless) pushes answered without a page, pulled apart)"))
        print("push latency p50 / p99          \(ms(p(pushes, 0.5))) / \(ms(p(pushes, 0.99)))")
        print("pull latency p50 / p99          \(ms(p(pulls, 0.5))) / \(ms(p(pulls, 0.99)))")
        print("PostgreSQL ceiling (same rows)  \(String(format: "%.0f", ceiling)) events/s  (INSERT of \(batch) rows per transaction, \(ceilingConnections) connections)")
        // The first seconds apart from the rest: a fresh database is measured in its first state.
        let samples = results.flatMap(\.pushes)
        let first = Duration.seconds(fresh ? firstSeconds : 0)
        for (name, window, length) in [("first \(firstSeconds) s", samples.filter { $0.start < first }, min(Double(firstSeconds), elapsedSeconds)),
                                       ("after \(firstSeconds) s", samples.filter { $0.start >= first }, elapsedSeconds - Double(firstSeconds))]
        where fresh && length > 0 {
            let ok = window.filter { $0.status == 200 }
            let latencies = window.map(\.latency).sorted()
            let label = name.padding(toLength: 32, withPad: " ", startingAt: 0)
            print("\(label)\(String(format: "%.0f", Double(ok.reduce(0) { $0 + $1.events }) / length)) events/s, "
                  + "\(window.count) pushes, \(window.filter { $0.status == 503 }.count) answered 503, "
                  + "\(window.count - ok.count - window.filter { $0.status == 503 }.count) other errors, "
                  + "push p50 / p99 \(ms(p(latencies, 0.5))) / \(ms(p(latencies, 0.99)))")
        }
        print("ratio server / ceiling          \(String(format: "%.2f", serverRate / ceiling))x  (\(batch)-row batches; target >= 1.0x)")
        print("cycle                           \(separatePull ? "push, then pull (2 requests)" : "push with pull=1 (1 request)")")
        // Where the CPU went, per 1,000 events (rows): the server process, every postgres process,
        // this load generator, and the machine as a whole (/proc/stat: the kernel is system, irq
        // and softirq time of every process; "other" is busy time of processes not named here).
        print("CPU per 1,000 events (rows)     through the server | PostgreSQL alone")
        let pad = { (text: String) in text.padding(toLength: 32, withPad: " ", startingAt: 0) }
        func per(_ seconds: Double?, _ count: Int) -> String { seconds.map { String(format: "%.3f s", $0 / Double(max(count, 1)) * 1000) } ?? "n/a" }
        for (name, load, alone) in [("  server (user + system)", loadCPU.server, ceilingCPU.server),
                                    ("  server system (kernel)", loadCPU.serverSystem, ceilingCPU.serverSystem),
                                    ("  PostgreSQL (user + system)", loadCPU.postgres, ceilingCPU.postgres),
                                    ("  PostgreSQL system (kernel)", loadCPU.postgresSystem, ceilingCPU.postgresSystem),
                                    ("  sync-load (user + system)", loadCPU.generator, ceilingCPU.generator),
                                    ("  machine busy (/proc/stat)", loadCPU.busy, ceilingCPU.busy),
                                    ("  machine kernel (sys+irq+soft)", loadCPU.kernel, ceilingCPU.kernel),
                                    ("  other processes", loadCPU.other, ceilingCPU.other)] {
            print("\(pad(name))\(per(load, stored).padding(toLength: 18, withPad: " ", startingAt: 0))| \(per(alone, ceilingRows))")
        }
        if let server = loadCPU.server, let postgres = loadCPU.postgres, let alone = ceilingCPU.postgres, alone > 0 {
            let through = (server + postgres) / Double(max(stored, 1))
            let row = alone / Double(max(ceilingRows, 1))
            print("bound (server + PostgreSQL CPU) \(String(format: "%.2f", row / through))x  (PostgreSQL CPU per row alone / server + PostgreSQL CPU per event: "
                  + "the most the ratio can be when CPU is the limit and the load generator runs elsewhere)")
        }
        var next = cursors
        for result in results { next[result.index] = result.cursor }
        return next
    }

    func measureCeiling(url: String, rows: Int, batch: Int, templates: [EventEnvelope]) async throws -> (rate: Double, rows: Int) {
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
            return (Double(total) / seconds, total)
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
    var index: Int
    var cursor = ""
    var push: [Duration] = []
    var pushes: [PushSample] = []
    var pull: [Duration] = []
    var stored = 0
    var pulled = 0
    var errors = 0
    /// Pushes with `pull=1` answered 200 without a page, followed by a pull apart.
    var pagelessPushes = 0
}

struct Reply: Sendable {
    let status: Int
    let body: Data
    /// The `Retry-After` header's seconds, where the answer has one (429 and 503).
    var retryAfter: Int? = nil
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
    return Reply(status: Int(response.status.code), body: Data(buffer.readableBytesView),
                 retryAfter: response.headers.first(name: "Retry-After").flatMap { Int($0) })
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

/// User and system CPU seconds of process `pid` (fields 14 and 15 of /proc/<pid>/stat, in clock
/// ticks); nil when it cannot be read.
func cpuTimes(pid: Int32) -> (user: Double, system: Double)? {
    guard let text = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
          let close = text.lastIndex(of: ")") else { return nil }
    // Fields after the command name (which may hold spaces): state is field 3.
    let fields = text[text.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
    let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
    return (user / tick, system / tick)
}

/// CPU times of every process named `postgres` (the PostgreSQL server and its backends), or nil
/// when /proc cannot be read. Backends that exit between two readings take their time with them,
/// so this is a lower bound when connections come and go.
func postgresCPUTimes() -> (user: Double, system: Double)? {
    guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
    var total = (user: 0.0, system: 0.0)
    for entry in entries {
        guard let pid = Int32(entry),
              let name = try? String(contentsOfFile: "/proc/\(entry)/comm", encoding: .utf8),
              name.trimmingCharacters(in: .whitespacesAndNewlines) == "postgres",
              let times = cpuTimes(pid: pid) else { continue }
        total.user += times.user
        total.system += times.system
    }
    return total
}

/// `to - from`, when both were read.
func cpuDelta(from start: Double?, to end: Double?) -> Double? {
    guard let start, let end else { return nil }
    return end - start
}

/// CPU seconds at one instant (see ``read(serverPID:)``); subtract two readings for an interval.
struct CPUSplit {
    var server: Double?
    var serverSystem: Double?
    var postgres: Double?
    var postgresSystem: Double?
    var generator: Double?
    /// Every CPU of the machine, not idle nor waiting for I/O (/proc/stat).
    var busy: Double?
    /// System, irq and softirq time of the machine (/proc/stat).
    var kernel: Double?
    /// Busy time of processes other than the server, PostgreSQL and this generator.
    var other: Double? {
        guard let busy, let server, let postgres, let generator else { return nil }
        return busy - server - postgres - generator
    }

    static func read(serverPID: Int32?) -> CPUSplit {
        let server = serverPID.flatMap(cpuTimes(pid:))
        let postgres = postgresCPUTimes()
        let machine = machineCPU()
        let generator = cpuTimes(pid: getpid())
        return CPUSplit(server: server.map { $0.user + $0.system }, serverSystem: server?.system,
                        postgres: postgres.map { $0.user + $0.system }, postgresSystem: postgres?.system,
                        generator: generator.map { $0.user + $0.system }, busy: machine?.busy, kernel: machine?.kernel)
    }

    static func - (end: CPUSplit, start: CPUSplit) -> CPUSplit {
        func d(_ a: Double?, _ b: Double?) -> Double? { cpuDelta(from: b, to: a) }
        return CPUSplit(server: d(end.server, start.server), serverSystem: d(end.serverSystem, start.serverSystem),
                        postgres: d(end.postgres, start.postgres), postgresSystem: d(end.postgresSystem, start.postgresSystem),
                        generator: d(end.generator, start.generator), busy: d(end.busy, start.busy), kernel: d(end.kernel, start.kernel))
    }
}

/// Busy and kernel (system + irq + softirq) CPU seconds of the whole machine, from /proc/stat.
func machineCPU() -> (busy: Double, kernel: Double)? {
    guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
          let line = text.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") }) else { return nil }
    let fields = line.split(separator: " ").dropFirst().compactMap { Double($0) }
    guard fields.count >= 8 else { return nil }
    // user nice system idle iowait irq softirq steal
    let tick = Double(sysconf(Int32(_SC_CLK_TCK)))
    let busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6] + fields[7]
    return (busy / tick, (fields[2] + fields[5] + fields[6]) / tick)
}
