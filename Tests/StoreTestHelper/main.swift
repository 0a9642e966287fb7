// A child process for the store's multi-process and crash tests. Each command writes one line
// per acknowledged step to stdout, unbuffered, so the parent knows what was acknowledged even
// when it kills this process.
//
// Every command takes [--map-size BYTES] and [--semaphore-prefix P] (LMDBEnvironmentOptions).
//
//   append-batches DIR --count N --batch B [--stream S] [--prefix P] [--map-size BYTES]
//       appends N events in batches of B (one write transaction each); after each commit prints
//       the batch's last position. Event i gets the ID deterministicID(prefix, i).
//   read-loop DIR --until N
//       reads the log forward repeatedly until it holds N events, checking every read is gapless;
//       prints "ok N".
//   reader-check DIR
//       opens the store and prints "cleared N", the stale reader slots its open cleared.
//   hold-snapshot DIR
//       opens a read transaction, prints "holding", and sleeps in it until killed.
//   hold-write DIR
//       opens the write transaction, prints "writing", and sleeps in it until killed.
//
// ReadingStore (facade) commands; they open the store through ReadingStore.open:
//   rebuild-digest DIR
//       prints "tz ZONE" (the process's TimeZone.current), "incremental HEX" (viewDigest of the
//       views as opened), then rebuilds and prints "rebuilt HEX" and "events N".
//   demo-appends DIR --chunk N [--readers R] [--days D] [--seed S]
//       generates DemoHistory(readers:days:seed:), prints "start COUNT", then appends it through
//       ReadingStore.appendRecorded in chunks of N (one write transaction each); after each commit
//       prints "ack POSITION EVENTID", the stored position of the chunk's last event. Ends with "done".
//   merge-chunks DIR --from SOURCE --chunk N [--kill-after-ms MS]
//       opens the store SOURCE and the store DIR, takes SOURCE's changes since DIR's version vector,
//       prints "start COUNT", then merges them into DIR in chunks of N (one ReadingStore.merge, one
//       write transaction each); after each merge prints "ack APPENDED LASTPOSITION". Ends with "done".
//       With --kill-after-ms, a thread raises SIGKILL MS milliseconds after "start" (a kill timed
//       from inside, so a slow pipe to a loaded parent cannot make it land after the last merge).
//   crash-rebuild DIR
//       prints "digest HEX" (the active views), starts ReadingStore.rebuild and, in its progress
//       callback after the first chunk, prints "chunk FOLDED TOTAL" and raises SIGKILL.
//
// Reliability commands (Tests/EventStoreLMDBTests/Reliability*.swift):
//   facade-execute DIR --prefix P [--count N]
//       executes, through ReadingStore.execute, addBook then recordPages(1 ... N-1) for a reader and
//       book derived from P (command i has the ID deterministicID(P, i)); after each commit prints
//       "ack POSITION EVENTID". Ends with "done".
//   threaded-appends DIR --threads T --count N --prefix P
//       T threads each append N single events to stream "P-t" (IDs deterministicID("P-t", i)),
//       one write transaction each; prints "done WRITTEN errors E" (errors also go to stderr).
//   snapshot-hold DIR --until-file PATH
//       opens a read transaction, prints "holding LAST", waits (in the same transaction) until
//       PATH exists, then prints "snapshot LAST BEYOND": the last position the snapshot still
//       sees and how many records after the first LAST it sees (0 when it is a true snapshot).
import DemoHistory
@_spi(RawLog) import EventStoreLMDB
import Foundation
import ReadingEvents
import TestSupport

#if canImport(Glibc)
import Glibc
#endif

func say(_ line: String) {
    let bytes = Array((line + "\n").utf8)
    bytes.withUnsafeBytes { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(1, buffer.baseAddress! + offset, buffer.count - offset)
            if written <= 0 { exit(3) }
            offset += written
        }
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data(("store-test-helper: " + message + "\n").utf8))
    exit(2)
}

let arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2 else { fail("usage: COMMAND DIR [options]") }
let command = arguments[0]
let directory = URL(fileURLWithPath: arguments[1])

func option(_ name: String) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func intOption(_ name: String, default value: Int) -> Int {
    option(name).flatMap(Int.init) ?? value
}

var options = LMDBEnvironmentOptions()
if let mapSize = option("--map-size").flatMap(Int.init) { options.mapSize = mapSize }
if let prefix = option("--semaphore-prefix") { options.semaphorePrefix = prefix }

/// The ReadingStore commands (each opens the store itself, so they run before the EventLog
/// commands below open the log: one path is opened at most once per process).
@MainActor func runFacadeCommand() throws -> Bool {
    switch command {
    case "rebuild-digest":
        let store = try ReadingStore.open(at: directory, options: options)
        say("tz \(TimeZone.current.identifier)")
        say("incremental \(try store.viewDigest())")
        let report = try store.rebuild()
        say("rebuilt \(report.digest)")
        say("events \(report.events)")
    case "demo-appends":
        let chunk = max(1, intOption("--chunk", default: 500))
        let history = DemoHistory.generate(.init(readers: intOption("--readers", default: 4), days: intOption("--days", default: 180),
                                                 seed: UInt64(intOption("--seed", default: 20_261_121))))
        let store = try ReadingStore.open(at: directory, options: options)
        say("start \(history.count)")
        var index = 0
        while index < history.count {
            let part = Array(history[index..<min(history.count, index + chunk)])
            try store.appendRecorded(part)
            let lastID = part.last!.eventID.uuid
            guard let stored = try store.event(withID: EventID(lastID)) else { fail("event \(lastID) missing after its append") }
            say("ack \(stored.position) \(lastID.uuidString)")
            index += part.count
        }
        say("done")
    case "facade-execute":
        let prefix = option("--prefix") ?? "fx"
        let count = max(2, intOption("--count", default: 1_000_000))
        let store = try ReadingStore.open(at: directory, options: options)
        let reader = ReaderID(deterministicID(prefix: prefix + "-reader", index: 0))
        let book = BookID(deterministicID(prefix: prefix + "-book", index: 0))
        let base = Timestamp(microseconds: 1_735_689_600_000_000)  // 2025-01-01T00:00:00Z
        for i in 0..<count {
            let command: BookCommand = i == 0
                ? .addBook(BookMetadata(title: "reliability \(prefix)", pageCount: BookMetadata.maxPageCount), status: .reading)
                : .recordPages(position: i)
            let context = CommandContext(reader: reader, occurredAt: Timestamp(microseconds: base.microseconds + Int64(i) * 60_000_000),
                                         timeZone: "Asia/Seoul", commandID: EventID(deterministicID(prefix: prefix, index: i)))
            let envelopes = try store.execute(command, book: book, context: context)
            guard let last = envelopes.last else { fail("command \(i) appended nothing") }
            say("ack \(last.position) \(last.eventID.uuid.uuidString)")
        }
        say("done")
    case "merge-chunks":
        guard let from = option("--from") else { fail("merge-chunks needs --from SOURCE") }
        let chunk = max(1, intOption("--chunk", default: 1_000))
        let source = try ReadingStore.open(at: URL(fileURLWithPath: from), options: options)
        let store = try ReadingStore.open(at: directory, options: options)
        let batch = try source.changes(since: try store.versionVector(), limit: .max)
        say("start \(batch.count)")
        if let delay = option("--kill-after-ms").flatMap(UInt32.init) {
            Thread.detachNewThread {
                usleep(delay * 1_000)
                raise(SIGKILL)
            }
        }
        var index = 0
        while index < batch.count {
            let result = try store.merge(Array(batch[index..<min(batch.count, index + chunk)]))
            say("ack \(result.appended) \(try store.lastPosition())")
            index += chunk
        }
        say("done")
    case "crash-rebuild":
        let store = try ReadingStore.open(at: directory, options: options)
        say("digest \(try store.viewDigest())")
        _ = try store.rebuild { folded, total in
            say("chunk \(folded) \(total)")
            raise(SIGKILL)
        }
        fail("rebuild returned without a progress call")
    default:
        return false
    }
    return true
}

do {
    if try runFacadeCommand() { exit(0) }
} catch {
    fail("\(error)")
}

do {
    let log = try EventLog.open(at: directory, options: options)
    switch command {
    case "append-batches":
        let count = intOption("--count", default: 100)
        let batch = intOption("--batch", default: 10)
        let stream = option("--stream") ?? "helper"
        let prefix = option("--prefix") ?? stream
        var index = 0
        while index < count {
            let size = min(batch, count - index)
            let events = (index..<(index + size)).map { i in
                NewEvent(eventID: deterministicID(prefix: prefix, index: i), payload: Array("\(prefix)-\(i)".utf8))
            }
            let result = try log.append(events, to: stream)
            say(String(result.positions.last ?? 0))
            index += size
        }
    case "read-loop":
        let until = UInt64(intOption("--until", default: 100))
        while true {
            let events = try log.read(from: 1)
            for (offset, event) in events.enumerated() where event.position != UInt64(offset + 1) {
                fail("gap: found position \(event.position) at index \(offset)")
            }
            if events.count >= until {
                say("ok \(events.count)")
                break
            }
            usleep(2_000)
        }
    case "reader-check":
        say("cleared \(log.environment.staleReadersCleared)")
    case "hold-snapshot":
        try log.environment.read { _ in
            say("holding")
            while true { sleep(1) }
        }
    case "hold-write":
        try log.environment.write { _ in
            say("writing")
            while true { sleep(1) }
        }
    case "threaded-appends":
        let threads = max(1, intOption("--threads", default: 8))
        let count = intOption("--count", default: 1000)
        let prefix = option("--prefix") ?? "thr"
        final class Counts: @unchecked Sendable {  // guarded by `lock`
            let lock = NSLock()
            var written = 0, errors = 0
            func add(written w: Int = 0, errors e: Int = 0) { lock.lock(); written += w; errors += e; lock.unlock() }
        }
        let counts = Counts()
        let group = DispatchGroup()
        for t in 0..<threads {
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                for i in 0..<count {
                    do {
                        let event = NewEvent(eventID: deterministicID(prefix: "\(prefix)-\(t)", index: i), payload: Array("\(prefix)-\(t)-\(i)".utf8))
                        let result = try log.append(event, to: "\(prefix)-\(t)")
                        counts.add(written: result.writtenCount)
                    } catch {
                        counts.add(errors: 1)
                        FileHandle.standardError.write(Data("threaded-appends \(t)/\(i): \(error)\n".utf8))
                    }
                }
            }
            thread.start()
        }
        group.wait()
        counts.lock.lock(); defer { counts.lock.unlock() }
        say("done \(counts.written) errors \(counts.errors)")
    case "snapshot-hold":
        guard let untilFile = option("--until-file") else { fail("snapshot-hold needs --until-file") }
        try log.environment.read { txn in
            let first = try log.lastPosition(in: txn)
            say("holding \(first)")
            while !FileManager.default.fileExists(atPath: untilFile) { usleep(10_000) }
            let again = try log.lastPosition(in: txn)
            let beyond = try log.events(from: first + 1, limit: 10, in: txn).count
            say("snapshot \(again) \(beyond)")
        }
    default:
        fail("unknown command \(command)")
    }
} catch {
    fail("\(error)")
}
